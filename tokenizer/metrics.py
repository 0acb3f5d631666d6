"""Recognition metrics, defined once (docs/sat.md §6) and reused by training and evaluation.

- cer: MathWriting's corpus-level character error rate, sum(edit distance) / sum(reference length)
  over LaTeX tokens (MathWriting's token classes, see tokenizer.lexer; whitespace in math mode is not
  a token). Argument order is explicit: references first, hypotheses second.
- em: exact match of token sequences. exprate_le1 / exprate_le2: token edit distance <= 1 / <= 2
  (the ICAL/TAMER convention on LaTeX tokens, not CROHME's label-graph tool).
- symbol_error_rate: edit distance between the SAT symbol streams, summed, over the summed length of
  the longer stream of each pair (so it stays in [0, 1]).
- structure_error_rate: positions whose SAT modifier (pre, post) differs, aligned by position index
  (a position present in only one of the two counts as an error), over the same denominator.
A hypothesis (or reference) that does not lex is scored on its raw characters, never an exception.
"""
from __future__ import annotations

import re
from typing import Sequence

from .errors import LatexError
from .lexer import tokenize
from .sat import split_streams

SCORE_KEYS = ("n", "cer", "em", "exprate_le1", "exprate_le2", "symbol_error_rate", "structure_error_rate")


def edit_distance(a: Sequence, b: Sequence) -> int:
    """Levenshtein distance (unit costs) between two sequences of hashable items."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    # strip the common prefix and suffix: cheap and common for near-correct hypotheses
    start = 0
    while start < len(b) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a -= 1
        end_b -= 1
    a = a[start:end_a]
    b = b[start:end_b]
    if not b:
        return len(a)
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        append = cur.append
        for j, y in enumerate(b, 1):
            append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def _tokens(latex: str) -> list[str]:
    try:
        return tokenize(latex)
    except LatexError:
        return [c for c in latex if not c.isspace()]


def _streams(tokens: list[str]) -> tuple[list[str], list[tuple]]:
    """(symbols, modifiers) of a token list; a list with no visible symbol has no positions."""
    try:
        pres, syms, posts = split_streams(tokens)
    except LatexError:
        return [], []
    return syms, list(zip(pres, posts))


def _check_lengths(refs: Sequence[str], hyps: Sequence[str]) -> None:
    if len(refs) != len(hyps):
        raise ValueError(f"{len(refs)} references but {len(hyps)} hypotheses")


def cer(refs: Sequence[str], hyps: Sequence[str]) -> float:
    """Corpus-level token error rate: sum of edit distances over sum of reference lengths."""
    _check_lengths(refs, hyps)
    errors = 0
    total = 0
    for r, h in zip(refs, hyps):
        rt = _tokens(r)
        errors += edit_distance(rt, _tokens(h))
        total += len(rt)
    if total == 0:
        return 0.0 if errors == 0 else float(errors)
    return errors / total


def score(refs: Sequence[str], hyps: Sequence[str]) -> dict[str, float]:
    """All metrics at once; keys exactly SCORE_KEYS; rates are fractions (cer can exceed 1)."""
    _check_lengths(refs, hyps)
    n = len(refs)
    tok_err = tok_total = exact = le1 = le2 = 0
    sym_err = struct_err = pos_total = 0
    for r, h in zip(refs, hyps):
        rt, ht = _tokens(r), _tokens(h)
        d = edit_distance(rt, ht)
        tok_err += d
        tok_total += len(rt)
        exact += d == 0
        le1 += d <= 1
        le2 += d <= 2
        rs, rm = _streams(rt)
        hs, hm = _streams(ht)
        longest = max(len(rs), len(hs))
        pos_total += longest
        sym_err += edit_distance(rs, hs)
        struct_err += sum(1 for k in range(longest) if k >= len(rm) or k >= len(hm) or rm[k] != hm[k])
    if tok_total:
        c = tok_err / tok_total
    else:
        c = 0.0 if tok_err == 0 else float(tok_err)
    return {
        "n": n,
        "cer": c,
        "em": exact / n if n else 0.0,
        "exprate_le1": le1 / n if n else 0.0,
        "exprate_le2": le2 / n if n else 0.0,
        "symbol_error_rate": sym_err / pos_total if pos_total else 0.0,
        "structure_error_rate": struct_err / pos_total if pos_total else 0.0,
    }


_MW_COMMAND = re.compile(r"\\(mathbb{[a-zA-Z]}|begin{[a-z]+}|end{[a-z]+}|operatorname\*|[a-zA-Z]+|.)")


def mathwriting_tokenize(latex: str) -> list[str]:
    """MathWriting's reference tokenizer, verbatim in behaviour (every character a token, spaces too),
    except that a lone trailing backslash is a token instead of a crash. For comparing with published
    figures; the project's metrics use tokenize()."""
    tokens = []
    i = 0
    n = len(latex)
    while i < n:
        if latex[i] == "\\":
            m = _MW_COMMAND.match(latex, i)
            tok = m.group(0) if m else "\\"
        else:
            tok = latex[i]
        tokens.append(tok)
        i += len(tok)
    return tokens


def token_distance(ref: str, hyp: str) -> int:
    """Edit distance between two labels' LaTeX tokens (the ExpRate <=k measure for one sample)."""
    return edit_distance(_tokens(ref), _tokens(hyp))
