"""One call that says whether a label is usable for training: lexes, validates, SAT round-trips."""
from __future__ import annotations

from .errors import LatexError
from .grammar import check_valid
from .lexer import tokenize
from .sat import split_streams


def sat_round_trips(tokens: list[str], pres: list, syms: list, posts: list) -> bool:
    """decode(encode(tokens)) == tokens, on the parallel streams (no Position objects)."""
    out: list[str] = []
    for pre, sym, post in zip(pres, syms, posts):
        out.extend(pre)
        out.append(sym)
        out.extend(post)
    return out == tokens


def label_verdict(latex: str) -> str | None:
    """None if the label lexes, validates and SAT round-trips; else 'kind: message'."""
    try:
        tokens = tokenize(latex)
        check_valid(tokens)
        pres, syms, posts = split_streams(tokens)
    except LatexError as err:
        return err.verdict()
    if not sat_round_trips(tokens, pres, syms, posts):  # cannot happen: SAT-L is lossless by construction
        return "sat-round-trip: decode(encode(tokens)) differs from the tokens"
    return None
