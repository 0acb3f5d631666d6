"""The corpus check over a chunk of lines at once, at C speed.

`CorpusCheck.add` checks a line with Python work per token: lex, detokenize, re-lex, squeeze
whitespace, validate, SAT split, count. Here the same questions are asked of a whole chunk of lines
joined by a separator, in a handful of regex and string passes that never loop over tokens in Python:
one scan (or, for space-tokenized corpora, one checked str.split) lexes every line, one substitution
detokenizes them all, the grammar's regex reduction runs over the class string of the chunk, and the
SAT positions come out of one split of it.

The token round trip (tokens -> string -> tokens) is decided without re-lexing where it can be: on
the plain path, tokenize(squeeze_whitespace(s)) == tokenize(s) (squeezing drops only whitespace the
lexer drops too; property-tested in tests/test_tokenizer_chunkcheck.py), so a line whose detokenized
text equals its squeezed original round-trips at both levels at once. Only the other lines are re-lexed.

Lines the plain scan cannot lex (text mode, where whitespace is a token; tokens to canonicalize) are
lexed and re-lexed one by one, and settled with the others. Validity is the grammar's regex reduction
over the whole chunk (environments reduce like groups; that the names it pairs are equal is checked
on the environment tokens alone); lines it rejects, lines with a command it leaves to the parser, and
environments whose names do not pair are parsed one by one. What is handed back to the per-line
check: lines with any error (so that it names the error), lines with no visible symbol, a line with
an odd trailing backslash or one of the markers below, and every line of a chunk where anything is
unexpected. So the answers are always the per-line check's answers: tests/test_tokenizer_chunkcheck.py
shows the reports identical, field for field, on generated and real corpora.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate, chain, compress, islice
from typing import Iterable, Sequence

from .grammar import TOKEN_CLASSES, _TOP_RE, env_names_nest, reduce_groups, token_class, validate
from .errors import LatexError
from .lexer import _FAST_RE, _SPECIAL_RE, detokenize, squeeze_whitespace, tokenize

SEP = "\x02"
"""Joins the lines of a chunk: lexes as a token of its own, is no whitespace, and no pattern crosses it."""

_UNSAFE = ("\x00", "\x01", SEP)  # the markers of detokenize, squeeze_whitespace and the chunk

# Lines the per-line lexer would not take through its plain scan. The lexer's pattern may run over
# `[^}]*?`; here it must stop at the separator, or a match starting in one line could hide a match
# starting in the next.
_moded_pattern = _SPECIAL_RE.pattern.replace("[^}]", "[^}" + SEP + "]")
assert _moded_pattern != _SPECIAL_RE.pattern, "lexer._SPECIAL_RE changed: review chunkcheck"
_MODED_RE = re.compile(_moded_pattern)

_CLASS_CHARS = "".join(sorted(TOKEN_CLASSES))
_ENV_CLASS_RE = re.compile("[BbpE]")  # environment tokens in a class string
_MODIFIER_CHARS = "^_{}"
_SYMBOL_CHARS = "".join(c for c in _CLASS_CHARS if c not in _MODIFIER_CHARS)
# class string -> 1 for a visible symbol, 0 for a modifier or a line break (for itertools.compress)
_SYMBOL_MASK = str.maketrans({**{c: "\x01" for c in _SYMBOL_CHARS}, **{c: "\x00" for c in _MODIFIER_CHARS + "\n"}})
# class string -> one "s" per visible symbol, modifiers kept
_POSITION_CLASSES = str.maketrans({c: "s" for c in _SYMBOL_CHARS})
_DROP_MODIFIERS = str.maketrans({c: None for c in _MODIFIER_CHARS})
# The chunk's class string with one "s" per symbol, split at the symbols, gives the runs of modifiers
# between them; a line break inside a run marks the end of one line and the start of the next. Position
# i is keyed by its two neighbouring runs (r_i, r_{i+1}), which position_key turns into SAT-L's
# (pre, post): the pre is r_i after its line break, else r_i less its leading closers; the post is
# r_{i+1} up to its line break, else its leading closers (sat.split_streams' rule).
_TOP_LINE_RE = re.compile("^(?:" + _TOP_RE.pattern + ")$", re.M)


def position_key(runs: tuple[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(r_i, r_{i+1}) -> the (pre, post) modifier pair of the symbol between them."""
    before, after = runs
    if "\n" in before:
        pre = before[before.rindex("\n") + 1:]
    else:
        pre = before.lstrip("}")
    if "\n" in after:
        post = after[:after.index("\n")]
    else:
        post = after[:len(after) - len(after.lstrip("}"))]
    return tuple(pre), tuple(post)


_class_table: dict[str, str] = {SEP: "\n"}
"""Token -> grammar class character (grammar.token_class), grown with every new token, so that classing
a chunk is one C-level map over its tokens. It holds only tokens the lexer produced, none of them a lone
backslash (that token ends a string, and such lines never get here): _lex_plain relies on it."""


def _classes(tokens: list[str]) -> str:
    """The grammar's class string of a token list (one character per token; SEP -> line break)."""
    try:
        return "".join(map(_class_table.__getitem__, tokens))
    except KeyError:
        if len(_class_table) > 200_000:  # a corpus of endless distinct commands: start over
            _class_table.clear()
            _class_table[SEP] = "\n"
        for t in set(tokens).difference(_class_table):
            _class_table[t] = token_class(t)
        return "".join(map(_class_table.__getitem__, tokens))


_SPACED_SEP = " " + SEP + " "


def _lex_plain(chunk: str) -> tuple[list[str], str]:
    """The tokens and the class string of a chunk of plain lines.

    Most real corpora are space-tokenized (`\\frac { a } { b }`). There, str.split gives the lexer's
    tokens 4x faster than its scan, and whether it did is checked on the way: every piece must be a
    token the lexer produced before (_class_table). Such a piece, with whitespace or the chunk's edge on
    both sides, is one token of the plain scan there (it is no lone backslash, so it cannot open a
    control space; merged commands spelled with whitespace are not plain). Any other piece (a compact
    `x^{2}`, a token not seen yet) and the chunk is lexed by the scan after all."""
    pieces = chunk.replace(SEP, _SPACED_SEP).split()
    try:
        return pieces, "".join(map(_class_table.__getitem__, pieces))
    except KeyError:
        tokens = _FAST_RE.findall(chunk)
        return tokens, _classes(tokens)


@dataclass
class ChunkResult:
    """What the chunk pass settled. Lists under fast are aligned with it; slow lines are left to the caller."""

    slow: list[int] = field(default_factory=list)
    fast: list[int] = field(default_factory=list)
    raw_lengths: list[int] = field(default_factory=list)
    sat_lengths: list[int] = field(default_factory=list)
    string_failures: list[tuple[int, str]] = field(default_factory=list)  # (line index, detokenized text)
    # iterators, to be consumed once (counting straight from them saves building a list per chunk):
    symbols: Iterable[str] = ()                  # every visible symbol of the fast lines
    positions: Iterable[tuple[str, str]] = ()    # each symbol of the fast lines as its two runs


def check_chunk(texts: Sequence[str]) -> ChunkResult:
    """Check the labels `texts` (none blank) together; see the module docstring for what is settled here."""
    out = ChunkResult()
    cand = [i for i, s in enumerate(texts) if s[-1] != "\\"]  # an odd trailing backslash would eat SEP
    if len(cand) < len(texts):
        out.slow = [i for i, s in enumerate(texts) if s[-1] == "\\"]
    chunk = SEP.join([texts[i] for i in cand])
    if any(m in chunk for m in _UNSAFE[:2]) or chunk.count(SEP) != len(cand) - 1:
        unsafe = {i for i in cand if any(m in texts[i] for m in _UNSAFE)}
        out.slow += sorted(unsafe)
        cand = [i for i in cand if i not in unsafe]
        chunk = SEP.join([texts[i] for i in cand])
    moded: list[int] = []
    if _MODED_RE.search(chunk) is not None:
        starts = list(accumulate((len(texts[i]) + 1 for i in cand), initial=0))
        flagged = {bisect_right(starts, m.start()) - 1 for m in _MODED_RE.finditer(chunk)}
        moded = [cand[k] for k in sorted(flagged)]
        cand = [i for k, i in enumerate(cand) if k not in flagged]
        chunk = SEP.join([texts[i] for i in cand])
    symbols: list[Iterable[str]] = []
    positions: list[Iterable[tuple[str, str]]] = []
    if cand:
        _settle(out, symbols, positions, texts, cand, *_lex_plain(chunk), chunk)
    if moded:
        _settle_moded(out, symbols, positions, texts, moded)
    out.symbols = chain.from_iterable(symbols)
    out.positions = chain.from_iterable(positions)
    out.slow.sort()
    return out


def _settle_moded(out: ChunkResult, symbols: list, positions: list, texts: Sequence[str],
                  lines: list[int]) -> None:
    """The lines the plain scan cannot lex (text mode, canonicalized tokens): each is lexed and re-lexed
    on its own, and everything else is settled for all of them at once."""
    cand: list[int] = []
    token_lists: list[list[str]] = []
    for i in lines:
        try:
            token_lists.append(tokenize(texts[i]))
        except LatexError:
            out.slow.append(i)
            continue
        cand.append(i)
    if not cand:
        return
    tokens = list(chain.from_iterable(toks + [SEP] for toks in token_lists))
    tokens.pop()  # no separator after the last line
    _settle(out, symbols, positions, texts, cand, tokens, _classes(tokens), SEP.join([texts[i] for i in cand]),
            token_lists)


def _settle(out: ChunkResult, symbols: list, positions: list, texts: Sequence[str], cand: list[int],
            tokens: list[str], classes: str, chunk: str, token_lists: list[list[str]] | None = None) -> None:
    """Settle the lines cand (joined: chunk; lexed: tokens, SEP between lines; classed: classes) into
    out, their symbols and position runs into the iterators symbols and positions. token_lists is given
    for moded lines: their token round trip is then checked by re-lexing each line (the squeezing lemma
    is for the plain scan only)."""
    class_lines = classes.split("\n")
    if len(class_lines) != len(cand):  # not what a plain chunk gives: ask line by line
        out.slow += cand
        return
    # the round trips, for every line at once: tokens -> string -> tokens, and the string up to whitespace
    detok = detokenize(tokens)  # SEP tokens come through as they are: one text per line
    squeezed = squeeze_whitespace(chunk)

    raw_lengths = list(map(len, class_lines))
    sat_lengths = list(map(len, classes.translate(_DROP_MODIFIERS).split("\n")))
    # validity: the grammar's regex reduction over every line at once (line-local: no pattern spans "\n")
    rejected = _TOP_LINE_RE.sub("", reduce_groups(classes)).split("\n")  # what the reduction accepts becomes ""
    # Lines the reduction rejects, lines with a command it leaves to the parser ("X"), and environments
    # whose names do not pair as the reduction paired them are validated by the parser, as the per-line
    # check does; only those it rejects are handed back, to report the error.
    token_starts = list(accumulate((n + 1 for n in raw_lengths), initial=0))
    line_tokens = (token_lists.__getitem__ if token_lists is not None
                   else lambda k: tokens[token_starts[k]:token_starts[k] + raw_lengths[k]])
    ask = {k for k, r in enumerate(rejected) if r} if any(rejected) else set()
    if "X" in classes:
        ask.update(k for k, c in enumerate(class_lines) if "X" in c)
    if _ENV_CLASS_RE.search(classes) is not None:
        for k, c in enumerate(class_lines):
            if k not in ask and _ENV_CLASS_RE.search(c) is not None:
                toks = line_tokens(k)
                if not env_names_nest([toks[m.start()] for m in _ENV_CLASS_RE.finditer(c)]):
                    ask.add(k)
    bad_set: set[int] = set()
    if 0 in sat_lengths:
        bad_set.update(k for k, n in enumerate(sat_lengths) if n == 0)
    for k in ask.difference(bad_set):
        try:
            validate(line_tokens(k))
        except LatexError:
            bad_set.add(k)

    string_failures: list[tuple[int, str]] = []
    if detok != squeezed or token_lists is not None:
        # Where a line's detokenized text is its own squeezed original, its token round trip holds (the
        # lemma above); the others are re-lexed here, and checked at string level as the per-line check does.
        detok_lines = detok.split(SEP)
        squeezed_lines = squeezed.split(SEP)
        for k, (text, sq) in enumerate(zip(detok_lines, squeezed_lines)):
            if k in bad_set or (text == sq and token_lists is None):
                continue
            try:
                again = tokenize(text)
            except LatexError:
                again = None
            if again != line_tokens(k):
                bad_set.add(k)  # the per-line check reports the failure
            elif text != sq and squeeze_whitespace(text) != sq:
                string_failures.append((k, text))

    position_classes = classes.translate(_POSITION_CLASSES)
    mask = bytearray(classes.translate(_SYMBOL_MASK), "latin-1")
    if bad_set:
        bad = sorted(bad_set)
        lines = position_classes.split("\n")
        for k in bad:
            mask[token_starts[k]:token_starts[k] + raw_lengths[k]] = bytes(raw_lengths[k])
            lines[k] = ""
        position_classes = "\n".join(lines)
        keep = [k for k in range(len(cand)) if k not in bad_set]
        fast = [cand[k] for k in keep]
        raw_lengths = [raw_lengths[k] for k in keep]
        sat_lengths = [sat_lengths[k] for k in keep]
    else:
        bad, fast = [], cand
    runs = ("\n" + position_classes + "\n").split("s")
    if len(runs) - 1 != sum(sat_lengths):  # the runs must tile the fast lines' positions
        out.slow += cand
        return
    out.slow += [cand[k] for k in bad]
    out.fast += fast
    out.raw_lengths += raw_lengths
    out.sat_lengths += sat_lengths
    out.string_failures += [(cand[k], text) for k, text in string_failures if k not in bad_set]
    symbols.append(compress(tokens, mask))
    positions.append(zip(runs, islice(runs, 1, None)))
