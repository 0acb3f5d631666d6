"""LabelSpec: the label space a recognizer was trained in, stored once with its vocabulary.

A run decides three things about its labels: which vocabulary (SAT positions for GryphOne, plain
LaTeX tokens for the autoregressive recognizers), whether every label is rewritten by
`tokenizer.normalize` first, and whether the SAT modifier set is the extended one. Training,
evaluation, prediction and export all read them from here, so "normalized" means one thing
everywhere: **the labels the model learns and is scored against went through `tokenizer.normalize`**.
(Scores computed after normalizing both reference and prediction, whatever the run did, are the
`*_canonical` metrics of `train.eval`.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .errors import LatexError
from .normalize import normalize
from .vocab import SATVocab, TokenVocab

LABEL_KINDS = ("sat", "token")


class LabelSpecError(ValueError):
    """A stored label spec that cannot be read back (names what is wrong)."""


@dataclass
class LabelSpec:
    kind: str                       # "sat" (SATVocab) | "token" (TokenVocab)
    vocab: SATVocab | TokenVocab
    normalized: bool = False        # labels go through tokenizer.normalize before encoding and scoring

    def __post_init__(self) -> None:
        want = SATVocab if self.kind == "sat" else TokenVocab if self.kind == "token" else None
        if want is None:
            raise LabelSpecError(f"label kind must be one of {LABEL_KINDS}, got {self.kind!r}")
        if not isinstance(self.vocab, want):
            raise LabelSpecError(f"a {self.kind!r} label spec needs a {want.__name__}, got {type(self.vocab).__name__}")

    @property
    def extended_modifiers(self) -> bool:
        return bool(getattr(self.vocab, "extended", False))

    def prepare(self, latex: str) -> str:
        """A label as the model learns it: normalized when the spec says so (a label the normalizer
        cannot parse is kept as written, and fails later where it is encoded)."""
        return prepare_label(latex, self.normalized)

    @classmethod
    def build(cls, kind: str, labels: Iterable[str], *, normalized: bool = False, extended_modifiers: bool = False,
              min_count: int = 1) -> "LabelSpec":
        """The vocabulary of `labels` for a recognizer of label kind `kind`. The labels are given as the
        model will learn them (already through `prepare` when `normalized`: the training data reads
        them that way once, for the vocabulary and the targets alike)."""
        prepared = list(labels)
        if kind == "token":
            vocab: SATVocab | TokenVocab = TokenVocab.build(prepared, min_count=min_count)
        elif kind == "sat":
            vocab = SATVocab.build(prepared, extended=extended_modifiers, min_count=min_count)
        else:
            raise LabelSpecError(f"label kind must be one of {LABEL_KINDS}, got {kind!r}")
        return cls(kind, vocab, normalized)

    def size(self) -> str:
        if isinstance(self.vocab, TokenVocab):
            return f"{len(self.vocab.tokens)} tokens"
        return f"{self.vocab.num_symbols} symbols x {self.vocab.num_modifiers} modifiers"

    def to_dict(self) -> dict:
        return {"kind": self.kind, "normalized": self.normalized, "vocab": self.vocab.to_dict()}

    @classmethod
    def from_dict(cls, d: object) -> "LabelSpec":
        if not isinstance(d, dict) or "kind" not in d or not isinstance(d.get("vocab"), dict):
            raise LabelSpecError("label spec must be a mapping with 'kind' and 'vocab'")
        kind = d["kind"]
        try:
            vocab = TokenVocab.from_dict(d["vocab"]) if kind == "token" else SATVocab.from_dict(d["vocab"])
        except (KeyError, TypeError, ValueError) as exc:
            raise LabelSpecError(f"label spec's vocabulary is unreadable: {exc}") from None
        return cls(kind, vocab, bool(d.get("normalized", False)))


def prepare_label(latex: str, normalized: bool) -> str:
    """`latex` through tokenizer.normalize when `normalized` (unchanged when it cannot be parsed)."""
    if not normalized:
        return latex
    try:
        return normalize(latex)
    except LatexError:
        return latex
