"""Position-forest training targets (PosFormer's supervision) aligned with SAT positions."""
from __future__ import annotations

import numpy as np

from tokenizer import position_forest

FOREST_RELATIONS = {"M": 0, "L": 1, "R": 2}


def forest_targets(latex: str, max_len: int, depths: int) -> tuple[np.ndarray, np.ndarray]:
    """Nesting level (capped at depths-1) and last relation per SAT position (-100 = ignore)."""
    level = np.full(max_len, -100, dtype=np.int64)
    relation = np.full(max_len, -100, dtype=np.int64)
    for i, path in enumerate(position_forest(latex)[:max_len]):
        level[i] = min(len(path) - 1, depths - 1)
        relation[i] = FOREST_RELATIONS.get(path[-1], 0)
    return level, relation
