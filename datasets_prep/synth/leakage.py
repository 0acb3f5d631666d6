"""Labels that must not be synthesized: those equal to a test label, compared as the tokenizer sees them.

A synthetic training ink whose label is a CROHME test label teaches the test answer, whatever hand
drew it. Equality is on the normalized token sequence (`tokenizer.normalize`, then `tokenize`), so
`x^2`, `x^{2}` and `x ^ { 2 }` are one label; a label the tokenizer rejects is compared by its
whitespace-collapsed text.
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tokenizer import LatexError, normalize, tokenize


def label_key(latex: str) -> str:
    """The comparison form of a label: its normalized tokens, space-joined."""
    try:
        return " ".join(tokenize(normalize(latex)))
    except (LatexError, RecursionError):
        return " ".join(latex.split())


class ExcludeSet:
    """Test labels to keep out of synthetic data (`label in ex` compares by `label_key`)."""

    def __init__(self, labels: Iterable[str] = (), sources: list[str] | None = None):
        self.keys = {label_key(lab) for lab in labels}
        self.sources = sources or []

    @classmethod
    def from_files(cls, paths: Iterable[Path]) -> "ExcludeSet":
        """Label files as --labels reads them (one label a line, or name<TAB>latex: the CROHME test
        captions as they are); ValueError naming the file when one cannot be read."""
        from .labels import read_label_file

        labels, sources = [], []
        for p in paths:
            labels += [lab for _, lab in read_label_file(Path(p))]
            sources.append(str(p))
        return cls(labels, sources)

    def __contains__(self, label: str) -> bool:
        return bool(self.keys) and label_key(label) in self.keys

    def __len__(self) -> int:
        return len(self.keys)
