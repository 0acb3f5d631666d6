"""Valid LaTeX out: every prediction is checked with the project's grammar and, if it does not parse,
replaced by the most probable nearby sequence that does.

A parallel decoder picks each position's argmax on its own, so nothing stops it from writing
`\\frac{6}` (no denominator) or an unclosed brace. The repair works on the sampler's last-step
probabilities: it tries changing one or two positions (a symbol or a modifier to one of its next
most probable values, or a symbol to PAD, which ends the label there), cheapest log-probability loss
first, and keeps the first candidate that validates. If none of those does, a last resort that
always ends valid deletes the token the grammar error points at until the label parses (a label with
nothing left becomes the placeholder symbol). Counts of raw-invalid, repaired and last-resort
outputs are kept so evaluation can report how often the raw argmax was invalid.
"""
from __future__ import annotations

import heapq
import itertools
from collections import Counter

import numpy as np

from tokenizer import LatexError, tokenize
from tokenizer.grammar import check_valid
from tokenizer.lexer import detokenize
from tokenizer.vocab import PLACEHOLDER

TOP_K = 3            # alternatives per position and stream
MAX_SINGLES = 48     # cheapest single edits considered
PAIR_POOL = 12       # pairs are formed among this many cheapest single edits


def is_valid(latex: str) -> bool:
    try:
        check_valid(tokenize(latex))
    except LatexError:
        return False
    return True


def delete_until_valid(latex: str) -> str:
    """Always-valid last resort: drop the token each grammar error points at (the last one if none)."""
    try:
        tokens = tokenize(latex)
    except LatexError:  # e.g. a trailing backslash
        tokens = tokenize(latex.rstrip("\\")) if latex.rstrip("\\") else []
    while tokens:
        try:
            check_valid(tokens)
            text = detokenize(tokens)
            tokenize(text)
            return text
        except LatexError as exc:
            pos = exc.position if exc.position is not None and 0 <= exc.position < len(tokens) else len(tokens) - 1
            del tokens[pos]
    return PLACEHOLDER


def _edits(sym: list[int], mod: list[int], sym_logp: np.ndarray, mod_logp: np.ndarray,
           length: int, specials: int) -> list[tuple[float, int, str, int]]:
    """Single edits (cost, position, stream, new id), cheapest first."""
    out = []
    span = min(length + 1, len(sym))  # the label's positions and the PAD that ends it (it may extend it)
    for stream, ids, logp in (("sym", sym, sym_logp), ("mod", mod, mod_logp)):
        k = min(TOP_K + 1, logp.shape[-1])
        top = np.argsort(-logp[:span], axis=-1, kind="stable")[:, :k]  # best first; ties by the lower id
        for i in range(span):
            cur = float(logp[i, ids[i]])
            for new in top[i].tolist():
                value = float(logp[i, new])
                if new == ids[i] or (new < specials and not (stream == "sym" and new == 0)):
                    continue  # MASK/UNK never, PAD only as a symbol (it ends the label)
                out.append((cur - value, i, stream, new))
    out.sort()
    return out[:MAX_SINGLES]


def repair_ids(vocab, sym: list[int], mod: list[int], sym_logp: np.ndarray, mod_logp: np.ndarray,
               stats: Counter | None = None) -> str:
    """The decoded label if it parses, else the cheapest valid one- or two-position edit, else the
    deletion repair. sym/mod are one sample's ids; *_logp its last step's log-probs [L, V]."""
    stats = stats if stats is not None else Counter()
    text = vocab.decode(sym, mod)
    if is_valid(text):
        return text
    stats["raw_invalid"] += 1
    sym_logp, mod_logp = np.asarray(sym_logp, dtype=np.float32), np.asarray(mod_logp, dtype=np.float32)
    length = next((i for i, s in enumerate(sym) if s == vocab.PAD), len(sym))
    singles = _edits(sym, mod, sym_logp, mod_logp, length, specials=3)
    pool = singles[:PAIR_POOL]
    pairs = [(a[0] + b[0], a, b) for a, b in itertools.combinations(pool, 2) if (a[1], a[2]) != (b[1], b[2])]
    candidates = [(e[0], (e,)) for e in singles] + [(c, (a, b)) for c, a, b in pairs]
    for _, edits in heapq.nsmallest(len(candidates), candidates, key=lambda c: c[0]):
        s, m = list(sym), list(mod)
        for _, i, stream, new in edits:
            (s if stream == "sym" else m)[i] = new
        cand = vocab.decode(s, m)
        if is_valid(cand):
            stats["repaired"] += 1
            return cand
    stats["last_resort"] += 1
    return delete_until_valid(text)
