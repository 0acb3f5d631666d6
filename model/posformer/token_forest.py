"""PosFormer's labels over plain LaTeX tokens: a position-forest path per token, and which tokens are
structure (no ink of their own, so no attention coverage).

`tokenizer.position_forest` gives a path (M, L, R steps) to every visible symbol, i.e. every token but
the modifiers `^ _ { }`. Here every token gets one, as PosFormer's label maker does: a modifier takes
the path of the level it hangs from (the owner's level), so in `x^{2}` the `^`, `{` and `}` are at `M`
with `x`, and only `2` is at `ML`. Paths follow the tokenizer's roles (superscript, numerator, root
index: L; subscript, denominator, radicand: R; arguments of other commands: the command's level).
"""
from __future__ import annotations

from typing import Sequence

from tokenizer import position_forest
from tokenizer.lexer import MODIFIERS
from tokenizer.vocab import TokenVocab

RELATIONS = {"M": 0, "L": 1, "R": 2}
STEP_CODES = {"M": 1, "L": 2, "R": 3}   # 0: no step (BOS, PAD, past the cap)
IGNORE = -100

_SPACES = frozenset({" ", "~", "\\,", "\\:", "\\;", "\\!", "\\ ", "\\quad", "\\qquad", "\\hspace", "\\vspace",
                     "\\enspace", "\\thinspace", "\\medspace", "\\thickspace", "\\negthinspace", "\\phantom",
                     "\\hphantom", "\\vphantom"})
_LAYOUT = frozenset({"&", "\\\\", "\\cr", "\\newline", "\\limits", "\\nolimits", "\\left", "\\right", "\\middle",
                     "\\displaystyle", "\\textstyle", "\\scriptstyle", "\\scriptscriptstyle", "*"})
_STYLES = frozenset({"\\mathrm", "\\mathbf", "\\mathit", "\\mathsf", "\\mathtt", "\\mathcal", "\\mathscr",
                     "\\mathfrak", "\\mathbb", "\\boldsymbol", "\\bm", "\\operatorname", "\\operatorname*",
                     "\\text", "\\mbox", "\\hbox", "\\textrm", "\\textbf", "\\textit", "\\texttt", "\\textsf",
                     "\\textup", "\\textnormal", "\\textmd", "\\textsl", "\\textsc", "\\emph", "\\rm", "\\bf",
                     "\\it", "\\cal"})
_DRAWN_ENVS = ("pmatrix", "bmatrix", "Bmatrix", "vmatrix", "Vmatrix", "cases")


def is_structure_token(token: str) -> bool:
    """True for a token with no region in the image: the modifiers `^ _ { }`, BOS/EOS/PAD, spacing,
    layout (`&`, `\\\\`, `\\limits`, `\\left`/`\\right` without their delimiter, which is its own
    token), font/style commands (the ink belongs to their argument) and the `\\begin`/`\\end` of an
    environment that draws no delimiter. `\\frac` (the bar), `\\sqrt` (the radical) and brackets are
    drawn, so they are entities; a `[ ]` pair around a root index is not drawn but shares its id with
    a drawn bracket, and a per-id rule keeps it an entity."""
    if token in MODIFIERS or token in _SPACES or token in _LAYOUT or token in _STYLES:
        return True
    if token in TokenVocab.SPECIALS:
        return token != "<unk>"          # an unknown symbol is still a symbol
    if token.startswith(("\\begin{", "\\end{")):
        return not token.rstrip("}*").endswith(_DRAWN_ENVS)
    return False


def token_paths(tokens: Sequence[str]) -> list[str]:
    """One M/L/R path per token (LatexError on an invalid label). Visible tokens take the tokenizer's
    path; `^`/`_` and the braces of a group take the level the group hangs from. A group's own level
    is the shortest path of a symbol inside it (all of them extend it); a group with no symbol takes
    its owner's level."""
    tokens = list(tokens)
    visible_paths = position_forest(tokens)
    visible = iter(visible_paths)
    inner = _group_levels(tokens, visible_paths)
    paths: list[str] = []
    context = ["M"]
    for i, tok in enumerate(tokens):
        if tok == "{":
            paths.append(context[-1])
            context.append(inner[i] or context[-1])
        elif tok == "}":
            context.pop()
            paths.append(context[-1])
        elif tok in ("^", "_"):
            paths.append(context[-1])
        else:
            paths.append(next(visible))
    return paths


def _group_levels(tokens: list[str], visible_paths: list[str]) -> dict[int, str]:
    """For each `{` index: the shortest path of a visible symbol before its matching `}` ("" if none)."""
    per_token: list[str | None] = []
    it = iter(visible_paths)
    for tok in tokens:
        per_token.append(None if tok in MODIFIERS else next(it))
    out: dict[int, str] = {}
    stack: list[int] = []
    for i, tok in enumerate(tokens):
        if tok == "{":
            stack.append(i)
        elif tok == "}":
            start = stack.pop()
            inside = [p for p in per_token[start + 1: i] if p is not None]
            out[start] = min(inside, key=len) if inside else ""
    return out


def token_forest(tokens: Sequence[str], levels: int = 5) -> tuple[list[int], list[int]]:
    """(nesting level, relation) per position of `BOS tokens EOS`, as TokenVocab.encode lays them out:
    level = len(path) - 1 capped at levels - 1, relation = the path's last step (M 0, L 1, R 2);
    BOS and EOS are not symbols and get IGNORE."""
    lv, rel = [IGNORE], [IGNORE]
    for p in token_paths(tokens):
        lv.append(min(len(p) - 1, levels - 1))
        rel.append(RELATIONS[p[-1]])
    return lv + [IGNORE], rel + [IGNORE]


def path_code(path: str, levels: int) -> int:
    """A path's first `levels` steps as one integer, base 4, first step lowest (0 = no path): the
    position-identifier input of the forest decoder, kept in one int64 target column."""
    return sum(STEP_CODES[s] * 4 ** k for k, s in enumerate(path[:levels]))
