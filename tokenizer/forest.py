"""Position-forest labels (PosFormer, ECCV 2024) derived from the validated parse (docs/sat.md §7).

Each visible symbol gets a path of M (same level), L (superscript, numerator, root index, text above
an arrow) and R (subscript, denominator, radicand, text below an arrow); nesting level is
len(path) - 1 and the relative position is the last step. Paths are aligned one-to-one with
encode(tokens) (the paper's modifier set). The walk follows the parse tree, so it always terminates.
"""
from __future__ import annotations

from typing import Sequence

from .errors import LatexError
from .grammar import Command, Env, Group, LeftRight, Middle, Optional, Scripts, validate
from .lexer import MODIFIERS, tokenize

_FRACTIONS = frozenset({"\\frac", "\\dfrac", "\\tfrac", "\\cfrac", "\\binom", "\\dbinom", "\\tbinom"})
_ABOVE_BASE = frozenset({"\\overset", "\\stackrel"})
_BELOW_BASE = frozenset({"\\underset"})


def _roles(name: str, nargs: int) -> tuple[str, list[str]]:
    """(step for the optional argument, steps for the mandatory ones)."""
    if name in _FRACTIONS:
        return "", ["L", "R"]
    if name == "\\sqrt":
        return "L", ["R"]
    if name in _ABOVE_BASE:
        return "", ["L", ""]
    if name in _BELOW_BASE:
        return "", ["R", ""]
    if name == "\\genfrac":
        return "", ["", "", "", "", "L", "R"]
    if name.startswith("\\x") and name.endswith(("arrow", "arrows", "harpoons", "equal", "mapsto", "up", "down")):
        return "R", ["L"]
    return "", [""] * nargs


def _walk(nodes: list, path: str, tokens: Sequence[str], paths: list) -> None:
    for node in nodes:
        _node(node, path, tokens, paths)


def _node(node, path: str, tokens: Sequence[str], paths: list) -> None:
    kind = type(node)
    if kind is int:
        paths[node] = path
    elif kind is Group:
        _walk(node.body, path, tokens, paths)
    elif kind is Scripts:
        if node.base is not None:
            _node(node.base, path, tokens, paths)
        if node.limits is not None:
            paths[node.limits] = path
        if node.sub is not None:
            _node(node.sub, path + "R", tokens, paths)
        if node.sup is not None:
            _node(node.sup, path + "L", tokens, paths)
    elif kind is Command:
        paths[node.index] = path
        if node.star is not None:
            paths[node.star] = path
        opt_step, steps = _roles(tokens[node.index], len(node.args))
        if node.opt is not None:
            _optional(node.opt, path + opt_step, tokens, paths)
        for arg, step in zip(node.args, steps):
            _node(arg, path + step, tokens, paths)
    elif kind is LeftRight:
        for i in (node.left, node.left + 1, node.right, node.right + 1):
            paths[i] = path
        _walk(node.body, path, tokens, paths)
    elif kind is Middle:
        paths[node.index] = paths[node.index + 1] = path
    elif kind is Env:
        paths[node.begin] = paths[node.end] = path
        if node.opt is not None:
            _optional(node.opt, path, tokens, paths)
        for arg in node.args:
            _node(arg, path, tokens, paths)
        _walk(node.body, path, tokens, paths)
    elif kind is Optional:
        _optional(node, path, tokens, paths)


def _optional(opt: Optional, path: str, tokens: Sequence[str], paths: list) -> None:
    paths[opt.open] = paths[opt.close] = path
    _walk(opt.body, path, tokens, paths)


def position_forest(latex_or_tokens: str | Sequence[str]) -> list[str]:
    """One M/L/R path per visible symbol, aligned with encode(); raises LatexError on an invalid label."""
    tokens = tokenize(latex_or_tokens) if isinstance(latex_or_tokens, str) else list(latex_or_tokens)
    tree = validate(tokens)
    paths: list = [None] * len(tokens)
    _walk(tree, "M", tokens, paths)
    out = []
    for i, tok in enumerate(tokens):
        if tok in MODIFIERS:
            continue
        p = paths[i]
        if p is None:  # cannot happen for a validated parse; say so instead of misaligning
            raise LatexError("internal", f"token {i}: {tok!r} got no position-forest path", i)
        out.append(p)
    if not out:
        raise LatexError("no-visible-symbol", "the label has no visible symbol, so it has no position-forest path")
    return out
