"""The one exception type the tokenizer raises on bad input, so callers can catch exactly that."""
from __future__ import annotations


class LatexError(ValueError):
    """A label that cannot be lexed, parsed or encoded.

    kind is a short, stable error class ("unbalanced-brace", "double-script", ...) that reports can
    count by; position is the token index the problem was found at (None when not applicable);
    str(err) is a one-line human message naming the position and what was expected.
    """

    def __init__(self, kind: str, message: str, position: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.position = position

    def __reduce__(self):  # keep kind/position through pickling (multiprocessing workers)
        return (type(self), (self.kind, str(self), self.position))

    def verdict(self) -> str:
        """'kind: message', the form label_verdict and the checker report."""
        return f"{self.kind}: {self}"
