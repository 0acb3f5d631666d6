"""Synthetic handwritten math from LaTeX: stroke-font glyphs placed by a small layout engine.

Public API (other parts code against these names):
    synthesize(latex, rng, *, style=None) -> Ink      one label -> one ink (raises SynthError)
    synthesize_batch(labels, rngs, styles=None)       the same for many, in one numeric pass
    random_label(rng, *, depth=2, length=8) -> str    a random well-formed CROHME-symbol-set label
    generate(count, out, ...) -> dict                 write InkML files as MathWriting or CROHME do
    SynthError(label, reason)                         what an undrawable label raises
    Style                                             one writer's handwriting parameters
    bank_shards(bank_dir, labels, count, out_dir, size, seed) -> Path
                                                      cached shards of real-hand inks (a glyph bank's)
"""
from .bank_shards import bank_shards
from .batch import generate
from .core import canonical_label, synthesize, synthesize_batch
from .errors import SynthError
from .labels import random_label
from .style import Style

__all__ = ["synthesize", "synthesize_batch", "random_label", "generate", "SynthError", "Style", "canonical_label",
           "bank_shards"]
