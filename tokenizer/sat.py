"""SAT-L: lossless alignment of invisible modifiers to visible symbols (docs/sat.md §2).

Each position is (pre, sym, post). Between two symbols, the left symbol's post is the longest
leading run of closers (`}`); the rest of the run is the right symbol's pre. The run before the first
symbol is its pre, the run after the last its post. Decoding is concatenation, so
decode(encode(t)) == t for every token list with at least one visible symbol.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

from .errors import LatexError
from .lexer import MODIFIERS

EMPTY: tuple[str, ...] = ()

EXTENDED_WORD_MODIFIERS = frozenset({"\\left", "\\right", "\\middle", "\\limits", "\\nolimits"})
"""Extended set: sizing/limits words that carry no ink of their own."""
EXTENDED_CLOSERS = frozenset({"}", "\\limits", "\\nolimits"})
OPTIONAL_ARG_COMMANDS = frozenset({
    "\\sqrt", "\\xrightarrow", "\\xleftarrow", "\\xleftrightarrow", "\\xRightarrow", "\\xLeftarrow",
    "\\xLeftrightarrow", "\\xmapsto", "\\xlongequal", "\\xhookrightarrow", "\\xhookleftarrow",
    "\\xrightharpoonup", "\\xrightharpoondown", "\\xleftharpoonup", "\\xleftharpoondown",
    "\\xrightleftharpoons", "\\xleftrightharpoons", "\\xtwoheadrightarrow", "\\xtwoheadleftarrow",
})
"""Commands whose `[...]` optional argument brackets become modifiers in the extended set."""


class Position(NamedTuple):
    """One SAT position: the modifiers before the symbol, the symbol, the modifiers after it."""

    pre: tuple[str, ...]
    sym: str
    post: tuple[str, ...]


_new_position = tuple.__new__


def _no_symbol() -> LatexError:
    return LatexError("no-visible-symbol",
                      "the label has no visible symbol (empty, or only braces and scripts), so it has no SAT "
                      "position to carry its modifiers", None)


def split_streams(tokens: Sequence[str], modifier_mask: Sequence[bool] | None = None,
                  closer_mask: Sequence[bool] | None = None
                  ) -> tuple[list[tuple[str, ...]], list[str], list[tuple[str, ...]]]:
    """(pres, syms, posts) as parallel lists: the fast core of encode().

    Without masks the paper's modifiers ^ _ { } are used; with masks, token i is a modifier when modifier_mask[i] and a closer (goes to the left symbol's post)
    when closer_mask[i].
    """
    if modifier_mask is not None:
        return _split_masked(tokens, modifier_mask, closer_mask)
    pres: list[tuple[str, ...]] = []
    syms: list[str] = []
    posts: list[tuple[str, ...]] = []
    pre_append, sym_append, post_append = pres.append, syms.append, posts.append
    run: list[str] = []
    for t in tokens:
        if t in MODIFIERS:
            run.append(t)
            continue
        if run:
            if syms:
                k = 0
                n = len(run)
                while k < n and run[k] == "}":
                    k += 1
                post_append(tuple(run[:k]))
                pre_append(tuple(run[k:]))
            else:
                pre_append(tuple(run))
            run = []
        else:
            if syms:
                post_append(EMPTY)
            pre_append(EMPTY)
        sym_append(t)
    if not syms:
        raise _no_symbol()
    post_append(tuple(run))
    return pres, syms, posts


def _split_masked(tokens: Sequence[str], modifier_mask: Sequence[bool], closer_mask: Sequence[bool]
                  ) -> tuple[list[tuple[str, ...]], list[str], list[tuple[str, ...]]]:
    """The rule spelled out as a loop; any modifier set."""
    pres: list[tuple[str, ...]] = []
    syms: list[str] = []
    posts: list[tuple[str, ...]] = []
    run: list[str] = []
    closer_run: list[bool] = []
    for t, is_mod, is_closer in zip(tokens, modifier_mask, closer_mask):
        if is_mod:
            run.append(t)
            closer_run.append(is_closer)
            continue
        if syms:
            k = 0
            n = len(run)
            while k < n and closer_run[k]:
                k += 1
            posts.append(tuple(run[:k]))
            pres.append(tuple(run[k:]))
        else:
            pres.append(tuple(run))
        run = []
        closer_run = []
        syms.append(t)
    if not syms:
        raise _no_symbol()
    posts.append(tuple(run))
    return pres, syms, posts


def paper_masks(tokens: Sequence[str]) -> tuple[list[bool], list[bool]]:
    """The paper's set as masks (for the loop form of the rule)."""
    return [t in MODIFIERS for t in tokens], [t == "}" for t in tokens]


def extended_masks(tokens: Sequence[str]) -> tuple[list[bool], list[bool]]:
    """Which tokens are modifiers / closers in the extended set (brackets of an optional argument,
    `\\left` `\\right` `\\middle`, `\\limits` `\\nolimits`, and ^ _ { })."""
    n = len(tokens)
    is_mod = [t in MODIFIERS or t in EXTENDED_WORD_MODIFIERS for t in tokens]
    is_closer = [t in EXTENDED_CLOSERS for t in tokens]
    for i in range(n - 1):
        if tokens[i] in OPTIONAL_ARG_COMMANDS and tokens[i + 1] == "[" and not is_mod[i + 1]:
            close = _matching_bracket(tokens, i + 1)
            if close is not None:
                is_mod[i + 1] = True
                is_mod[close] = True
                is_closer[close] = True
    return is_mod, is_closer


def _matching_bracket(tokens: Sequence[str], open_index: int) -> int | None:
    """Index of the `]` closing the optional argument opened at open_index (brace- and bracket-aware)."""
    braces = 0
    brackets = 0
    for j in range(open_index + 1, len(tokens)):
        t = tokens[j]
        if t == "{":
            braces += 1
        elif t == "}":
            braces -= 1
            if braces < 0:
                return None
        elif braces == 0:
            if t == "[":
                brackets += 1
            elif t == "]":
                if brackets == 0:
                    return j
                brackets -= 1
    return None


def encode(tokens: Sequence[str], *, extended: bool = False) -> list[Position]:
    """Token list -> SAT positions; raises LatexError(kind="no-visible-symbol") when there is none."""
    if extended:
        pres, syms, posts = split_streams(tokens, *extended_masks(tokens))
    else:
        pres, syms, posts = split_streams(tokens)
    return [_new_position(Position, p) for p in zip(pres, syms, posts)]


def decode(positions: Sequence[Position]) -> list[str]:
    """SAT positions -> token list: plain concatenation of pre, sym, post."""
    out: list[str] = []
    for pre, sym, post in positions:
        if pre:
            out.extend(pre)
        out.append(sym)
        if post:
            out.extend(post)
    return out


def is_canonical(positions: Sequence[Position]) -> bool:
    """True when encode(decode(positions)) == positions (paper's modifier set).

    Canonical: pre/post hold only modifiers and sym is not one; every post except the last is
    `}`-only; and no pre after the first position starts with `}`.
    """
    last = len(positions) - 1
    for i, (pre, sym, post) in enumerate(positions):
        if sym in MODIFIERS or any(m not in MODIFIERS for m in pre) or any(m not in MODIFIERS for m in post):
            return False
        if i < last and any(m != "}" for m in post):
            return False
        if i > 0 and pre and pre[0] == "}":
            return False
    return bool(positions)
