"""Small recognizers for tests: fixed-size vocabularies and a canvas, built through the seam."""
from __future__ import annotations

import dataclasses
import shutil

import pytest

from datasets_prep.render_spec import RenderSpec
from datasets_prep.synth.tex import DEBIAN_PACKAGES, TOOLS
from model import ARConfig, GryphOneConfig, LossConfig, build
from model.registry import recognizer_class
from tokenizer.label_spec import LabelSpec
from tokenizer.vocab import EMPTY_MODIFIER, SATVocab, TokenVocab

needs_tex = pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS),
                               reason=f"latex and dvipng are not installed (apt-get install {' '.join(DEBIAN_PACKAGES)})")
"""For tests that typeset with a real TeX (datasets_prep.synth.tex); CI installs it."""

TINY = dict(patch=16, enc_dim=32, enc_depth=1, enc_heads=2, dec_dim=32, dec_depth=2, dec_heads=2, dropout=0.0,
            max_len=12)


BLOCK_TORCH = """
import importlib.abc, json, sys
class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is not installed here (blocked by the test)")
sys.meta_path.insert(0, NoTorch())
"""
"""The head of a `python -c` script that runs as if torch were not installed (the torch-free ONNX path)."""


def sat_labels(num_symbols: int = 20, num_modifiers: int = 7, normalized: bool = False) -> LabelSpec:
    symbols = list(SATVocab.SPECIAL_SYMBOLS) + [f"s{i}" for i in range(num_symbols - 3)]
    extra = [((), (f"^{i}",)) for i in range(num_modifiers - 4)]
    modifiers = list(SATVocab.SPECIAL_MODIFIERS) + [EMPTY_MODIFIER] + extra
    return LabelSpec("sat", SATVocab(symbols, modifiers), normalized)


def token_labels(num_tokens: int = 15) -> LabelSpec:
    return LabelSpec("token", TokenVocab(list(TokenVocab.SPECIALS) + [f"t{i}" for i in range(num_tokens - 4)]))


def tiny_cfg(kind: str = "diffusion", **kw):
    cls = recognizer_class(kind).config_class
    fields = {f.name for f in dataclasses.fields(cls)}
    base = {k: v for k, v in TINY.items() if k in fields} | {"kind": kind}
    if cls is GryphOneConfig:
        base["loss"] = LossConfig(T=10)
    base.update(kw)
    return cls(**base)


def tiny_model(kind: str = "diffusion", canvas=(32, 64), labels: LabelSpec | None = None, **kw):
    cfg = tiny_cfg(kind, **kw)
    if labels is None:
        labels = sat_labels() if recognizer_class(kind).label_kind == "sat" else token_labels()
    return build(cfg, RenderSpec(canvas), labels)


__all__ = ["ARConfig", "BLOCK_TORCH", "GryphOneConfig", "sat_labels", "tiny_cfg", "tiny_model", "token_labels"]
