"""python -m tokenizer.check corpus.txt [more files | -]: what the tokenizer makes of a label corpus.

Reports lines read/blank/skipped; valid vs invalid by error class (with examples and line numbers);
round-trip exactness at token level, string level (up to insignificant whitespace) and SAT level;
raw-token vs SAT lengths (p50/p95/max, how many exceed --max-len); symbol and modifier inventories;
OOV against --vocab; what --normalize would change; throughput.
With --against TRAIN...: how many of the labels also occur in the training corpora, exactly and after
normalize(), per file and in total, with examples (file:line on both sides).
Exit status: 0 when every accepted (lexable) line round-trips, 1 when any does not (or when the leakage
exceeds --max-leak), 2 on a usage error.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict
from itertools import chain
from operator import attrgetter
from typing import Iterable, Iterator, Sequence

from .chunkcheck import ChunkResult, check_chunk, position_key
from .corpus import FORMATS, Line, NotACorpus, Skipped, open_source, read_corpus, refuse_binary
from .errors import LatexError
from .grammar import check_valid
from .lexer import detokenize, squeeze_whitespace, tokenize
from .normalize import clean_crohme_truth, normalize
from .sat import extended_masks, split_streams
from .vocab import SATVocab

_flatten = chain.from_iterable
_continuation = attrgetter("continuation")
CHUNK_LINES = 256
"""Distinct labels per chunkcheck call: large enough that per-call overhead vanishes, small enough that
a chunk's strings stay in cache (256 ran ~3% faster than 512 and than 1024 side by side on the shared
corpora)."""
BLOCK_LINES = 16384
"""Lines per add_many call from check_sources: repeats are found within a block (memory stays bounded)."""


def _percentile(sorted_values: list[int], q: float) -> int:
    if not sorted_values:
        return 0
    k = min(len(sorted_values) - 1, max(0, int(round(q * (len(sorted_values) - 1)))))
    return sorted_values[k]


def _length_stats(values: list[int], max_len: int) -> dict:
    v = sorted(values)
    return {"p50": _percentile(v, 0.5), "p95": _percentile(v, 0.95), "max": v[-1] if v else 0,
            "over_max_len": sum(1 for x in values if x > max_len)}


def _top(counter: Counter, k: int) -> list:
    """Most common first, ties in a fixed order (so every processing order reports the same list)."""
    return sorted(counter.items(), key=lambda kv: (-kv[1], repr(kv[0])))[:k]


def _mod_str(mod: tuple) -> str:
    pre, post = mod
    return "".join(pre) + "·" + "".join(post)


class CorpusCheck:
    """Accumulates the statistics of one check run, line by line (streaming: corpora can be large)."""

    def __init__(self, *, vocab: SATVocab | None = None, max_len: int = 150, extended: bool = False,
                 do_normalize: bool = False, crohme: bool = False, show: int = 3):
        self.vocab = vocab
        self.max_len = max_len
        self.extended = extended
        self.do_normalize = do_normalize
        self.crohme = crohme
        self.show = show
        self.files: list[str] = []
        self.lines = 0
        self.physical_lines = 0
        self.blank = 0
        self.continuation = 0
        self.skipped: Counter = Counter()
        self.skipped_examples: dict[str, list] = defaultdict(list)
        self.accepted = 0
        self.valid = 0
        self.invalid: Counter = Counter()
        self.invalid_examples: dict[str, list] = defaultdict(list)
        self.token_rt_fail: list = []
        self.string_rt_fail: list = []
        self.sat_rt_fail: list = []
        self.token_rt_fail_n = self.string_rt_fail_n = self.sat_rt_fail_n = 0
        self.raw_lengths: list[int] = []
        self.sat_lengths: list[int] = []
        self.symbols: Counter = Counter()
        self._modifiers: Counter = Counter()          # (pre, post) -> count
        self._position_counts: Counter = Counter()    # the chunk path's (run before, run after) -> count
        self.oov_labels = 0
        self.oov_symbols: Counter = Counter()
        self.oov_modifiers: Counter = Counter()
        self.oov_positions = 0
        self.positions_checked = 0
        self.normalize_changed = 0
        self.normalize_failed = 0
        self.normalize_examples: list = []
        self.elapsed = 0.0
        if vocab is not None:
            self._vocab_syms = set(vocab.symbols)
            self._vocab_mods = set(vocab.modifiers)

    @property
    def modifiers(self) -> Counter:
        """(pre, post) modifier pairs of the valid labels -> count."""
        if self._position_counts:
            for position, n in self._position_counts.items():
                self._modifiers[position_key(position)] += n
            self._position_counts.clear()
        return self._modifiers

    @property
    def chunked(self) -> bool:
        """Whether add_many may take the chunk path (it covers the default check: no OOV, no normalize
        report, the paper's modifier set); otherwise it checks line by line."""
        return self.vocab is None and not self.do_normalize and not self.extended

    def add_many(self, lines: Sequence[Line]) -> None:
        """Check several lines: the same statistics as add() on each, most of them at C speed.

        Repeated labels (common in real corpora: CROHME's 8,835 training captions hold 4,822 distinct
        ones) are checked once and counted as often as they occur; the distinct ones go through
        chunkcheck in chunks of CHUNK_LINES, grouped by how often they occur so that one weight serves
        a whole chunk. Lines the chunk path hands back are checked one by one, every occurrence."""
        if not self.chunked:
            for line in lines:
                self.add(line)
            return
        texts = [clean_crohme_truth(ln.latex) for ln in lines] if self.crohme else [ln.latex for ln in lines]
        self._count_lines(len(lines), sum(map(_continuation, lines)))
        by_weight: dict[int, list[str]] = {}
        for latex, weight in Counter(texts).items():
            if not latex or latex.isspace():
                self.blank += weight
            else:
                by_weight.setdefault(weight, []).append(latex)
        slow: list[str] = []
        string_failures: list[tuple[str, str]] = []
        for weight, distinct in by_weight.items():
            for i in range(0, len(distinct), CHUNK_LINES):
                part = distinct[i:i + CHUNK_LINES]
                res = check_chunk(part)
                self._add_chunk(res, weight)
                slow += [part[k] for k in res.slow]
                string_failures += [(part[k], text) for k, text in res.string_failures]
        if slow or string_failures:  # these need their lines: for line numbers, and to check each one
            wanted = set(slow).union(latex for latex, _ in string_failures)
            occurrences: dict[str, list[Line]] = {}
            for line, latex in zip(lines, texts):
                if latex in wanted:
                    occurrences.setdefault(latex, []).append(line)
            for latex in slow:
                for line in occurrences[latex]:
                    self._check(line, latex)
            for latex, text in string_failures:
                for line in occurrences[latex]:
                    self.string_rt_fail_n += 1
                    self._example(self.string_rt_fail, line, f"detokenized to {text!r}")

    def _count_lines(self, expressions: int, continuation: int) -> None:
        self.lines += expressions
        self.physical_lines += expressions + continuation
        self.continuation += continuation

    def _add_chunk(self, res: ChunkResult, weight: int) -> None:
        """Fold in the lines a chunk settled (its slow lines and string failures are the caller's);
        every text in it occurs `weight` times."""
        n = len(res.fast) * weight
        self.accepted += n
        self.valid += n
        self.raw_lengths += res.raw_lengths * weight
        self.sat_lengths += res.sat_lengths * weight
        for target, items in ((self.symbols, res.symbols), (self._position_counts, res.positions)):
            if weight == 1:
                target.update(items)
                continue
            counts = Counter(items)
            for key, c in counts.items():
                target[key] += c * weight

    def _keep(self, store: list, lineno: int, example: dict) -> None:
        """Keep the `show` first examples in file order, whatever order lines are processed in."""
        store.append(((len(self.files), lineno), example))
        if len(store) > self.show:
            store.sort(key=lambda kv: kv[0])
            del store[self.show:]

    def _example(self, store: list, line: Line, detail: str) -> None:
        self._keep(store, line.lineno, {"where": f"{line.source}:{line.lineno}", "latex": line.latex,
                                        "detail": detail})

    def add_skipped(self, rec: Skipped) -> None:
        self.skipped[rec.reason] += 1
        self.physical_lines += 1
        self._keep(self.skipped_examples[rec.reason], rec.lineno,
                   {"where": f"{rec.source}:{rec.lineno}", "detail": rec.detail})

    def add(self, line: Line, latex: str | None = None) -> None:
        """Check one line (latex: the line's label already cleaned, when the caller did it)."""
        self._count_lines(1, line.continuation)
        if latex is None:
            latex = clean_crohme_truth(line.latex) if self.crohme else line.latex
        self._check(line, latex)

    def _check(self, line: Line, latex: str) -> None:
        """The per-line check of a counted line: the reference every faster path must agree with."""
        if not latex or latex.isspace():
            self.blank += 1
            return
        try:
            toks = tokenize(latex)
        except LatexError as err:
            self._invalid(err, line)
            return
        self.accepted += 1
        self.raw_lengths.append(len(toks))
        # round trips: tokens -> string -> tokens, and the string itself up to whitespace
        text = detokenize(toks)
        try:
            again = tokenize(text)
        except LatexError as err:  # detokenize produced something unlexable: a bug, reported as such
            again = None
            detail = err.verdict()
        if again != toks:
            self.token_rt_fail_n += 1
            self._example(self.token_rt_fail, line, f"re-lexed {text!r} differently" if again is not None
                          else detail)
        squeezed = squeeze_whitespace(latex)
        if text != squeezed and squeeze_whitespace(text) != squeezed:
            self.string_rt_fail_n += 1
            self._example(self.string_rt_fail, line, f"detokenized to {text!r}")
        ok = True
        try:
            check_valid(toks)
        except LatexError as err:
            self._invalid(err, line)
            ok = False
        try:
            if self.extended:
                pres, syms, posts = split_streams(toks, *extended_masks(toks))
            else:
                pres, syms, posts = split_streams(toks)
        except LatexError as err:
            if ok:
                self._invalid(err, line)
            return
        decoded = list(_flatten(_flatten(zip(pres, zip(syms), posts))))  # decode(), at C speed
        if decoded != toks:
            self.sat_rt_fail_n += 1
            self._example(self.sat_rt_fail, line, "decode(encode(tokens)) differs")
        self.sat_lengths.append(len(syms))
        if ok:
            self.valid += 1
            mods = list(zip(pres, posts))
            self.symbols.update(syms)
            self._modifiers.update(mods)
            if self.vocab is not None:
                self._oov(syms, mods, toks)
        if self.do_normalize:
            self._normalize(latex, toks, line)

    def _invalid(self, err: LatexError, line: Line) -> None:
        self.invalid[err.kind] += 1
        self._keep(self.invalid_examples[err.kind], line.lineno,
                   {"where": f"{line.source}:{line.lineno}", "latex": line.latex, "detail": str(err)})

    def _oov(self, syms: list, mods: list, toks: list) -> None:
        if self.vocab.extended != self.extended:  # count OOV the way the vocabulary encodes
            pres, syms, posts = (split_streams(toks, *extended_masks(toks)) if self.vocab.extended
                                 else split_streams(toks))
            mods = list(zip(pres, posts))
        bad_s = [s for s in syms if s not in self._vocab_syms]
        bad_m = [m for m in mods if m not in self._vocab_mods]
        self.positions_checked += len(syms)
        if bad_s or bad_m:
            self.oov_labels += 1
            self.oov_symbols.update(bad_s)
            self.oov_modifiers.update(bad_m)
            self.oov_positions += len({i for i, s in enumerate(syms) if s not in self._vocab_syms}
                                      | {i for i, m in enumerate(mods) if m not in self._vocab_mods})

    def _normalize(self, latex: str, toks: list, line: Line) -> None:
        try:
            normed = normalize(latex)
            changed = tokenize(normed) != toks
        except LatexError as err:
            self.normalize_failed += 1
            self._example(self.normalize_examples, line, f"normalize failed: {err.verdict()}")
            return
        if changed:
            self.normalize_changed += 1
            self._example(self.normalize_examples, line, normed)

    # -- reporting -------------------------------------------------------------------------------
    def round_trip_failures(self) -> int:
        return self.token_rt_fail_n + self.string_rt_fail_n + self.sat_rt_fail_n

    def report(self, top: int = 15) -> dict:
        symbols = +self.symbols
        modifiers = +self.modifiers
        strip = (lambda store: [example for _, example in sorted(store, key=lambda kv: kv[0])])
        r: dict = {
            "files": self.files,
            "lines": self.lines, "physical_lines": self.physical_lines, "blank": self.blank,
            "continuation_lines": self.continuation,
            "skipped": dict(self.skipped),
            "skipped_examples": {k: strip(v) for k, v in self.skipped_examples.items()},
            "accepted": self.accepted, "valid": self.valid,
            "invalid": dict(self.invalid.most_common()),
            "invalid_examples": {k: strip(v) for k, v in self.invalid_examples.items()},
            "round_trip": {
                "token_exact": self.accepted - self.token_rt_fail_n, "token_failures": self.token_rt_fail_n,
                "string_exact": self.accepted - self.string_rt_fail_n, "string_failures": self.string_rt_fail_n,
                "sat_failures": self.sat_rt_fail_n,
                "examples": {"token": strip(self.token_rt_fail), "string": strip(self.string_rt_fail),
                             "sat": strip(self.sat_rt_fail)},
            },
            "lengths": {"max_len": self.max_len, "raw_tokens": _length_stats(self.raw_lengths, self.max_len),
                        "sat_positions": _length_stats(self.sat_lengths, self.max_len)},
            "inventory": {
                "extended": self.extended,
                "symbols": len(symbols), "modifiers": len(modifiers),
                "top_symbols": _top(symbols, top),
                "top_modifiers": [(_mod_str(m), c) for m, c in _top(modifiers, top)],
            },
            "seconds": round(self.elapsed, 3),
            "lines_per_second": round(self.lines / self.elapsed) if self.elapsed > 0 else None,
        }
        if self.vocab is not None:
            r["oov"] = {
                "labels_with_oov": self.oov_labels, "labels_checked": self.valid,
                "label_rate": self.oov_labels / self.valid if self.valid else 0.0,
                "position_rate": self.oov_positions / self.positions_checked if self.positions_checked else 0.0,
                "symbols": self.oov_symbols.most_common(top),
                "modifiers": [(_mod_str(m), c) for m, c in self.oov_modifiers.most_common(top)],
            }
        if self.do_normalize:
            r["normalize"] = {"changed": self.normalize_changed, "failed": self.normalize_failed,
                              "examples": strip(self.normalize_examples)}
        return r


class Leakage:
    """Which checked (test) labels also occur in training corpora: exactly, and after normalize().

    A label is the text the checker sees: the corpus reader's field (line end, BOM and, for captions, the
    surrounding whitespace stripped), CROHME-cleaned under --crohme; blank labels are not counted.
    Exact: byte-equal to a training label. Normalized: normalize() gives the same string as for some
    training label; exact matches count as normalized ones too (so normalized >= exact), also when
    normalize() rejects the label. Labels normalize() rejects are counted as not normalizable.
    Memory: one dict entry per distinct training label (and per distinct normalized one), no more."""

    def __init__(self, *, crohme: bool = False, show: int = 3):
        self.crohme = crohme
        self.show = show
        self.train_files: list[str] = []
        self.train_labels = 0
        self.train_blank = 0
        self.train_skipped: Counter = Counter()
        self._exact: dict[str, tuple[int, int]] = {}   # training label -> (file index, line) of its first occurrence
        self._normal: dict[str, str] = {}              # normalized -> the first training label normalizing to it
        self._unnormalizable: set[str] = set()         # distinct training labels normalize() rejects
        self.files: list[dict] = []
        self.examples: dict[str, list] = {"exact": [], "normalized": [], "not_normalizable": []}
        self.train_seconds = 0.0
        self.test_seconds = 0.0  # spent in add_timed: kept out of the checker's throughput

    def _text(self, line: Line) -> str:
        return clean_crohme_truth(line.latex) if self.crohme else line.latex

    def add_train(self, records: Iterable[Line | Skipped]) -> None:
        """Index one training file's records (the file's display name already in train_files)."""
        fi = len(self.train_files) - 1
        exact, normal = self._exact, self._normal
        for rec in records:
            if isinstance(rec, Skipped):
                self.train_skipped[rec.reason] += 1
                continue
            latex = self._text(rec)
            if not latex or latex.isspace():
                self.train_blank += 1
                continue
            self.train_labels += 1
            if latex in exact:
                continue
            exact[latex] = (fi, rec.lineno)
            try:
                normed = normalize(latex)
            except LatexError:
                self._unnormalizable.add(latex)
                continue
            normal.setdefault(latex if normed == latex else normed, latex)

    def _train_where(self, latex: str) -> str:
        fi, lineno = self._exact[latex]
        return f"{self.train_files[fi]}:{lineno}"

    def start_file(self, display: str) -> None:
        self.files.append({"file": display, "labels": 0, "exact": 0, "normalized": 0, "normalized_only": 0,
                           "not_normalizable": 0})

    def _example(self, kind: str, example: dict) -> None:
        if len(self.examples[kind]) < self.show:  # lines arrive in file order: the first ones are kept
            self.examples[kind].append(example)

    def add_many(self, lines: Sequence[Line]) -> None:
        """Count one block of the current test file's lines."""
        f = self.files[-1]
        normed_of: dict[str, str | LatexError] = {}  # within the block: repeated labels normalized once
        for line in lines:
            latex = self._text(line)
            if not latex or latex.isspace():
                continue
            f["labels"] += 1
            where = f"{line.source}:{line.lineno}"
            if latex in self._exact:
                f["exact"] += 1
                f["normalized"] += 1
                self._example("exact", {"where": where, "latex": latex, "train": self._train_where(latex)})
                if latex in self._unnormalizable:  # the training copy told us: normalize() rejects it
                    f["not_normalizable"] += 1
                continue
            normed = normed_of.get(latex)
            if normed is None:
                try:
                    normed = normalize(latex)
                except LatexError as err:
                    normed = err
                normed_of[latex] = normed
            if isinstance(normed, LatexError):
                f["not_normalizable"] += 1
                self._example("not_normalizable", {"where": where, "latex": latex, "detail": normed.verdict()})
                continue
            first = self._normal.get(normed)
            if first is not None:
                f["normalized"] += 1
                f["normalized_only"] += 1
                self._example("normalized", {"where": where, "latex": latex, "train": self._train_where(first),
                                             "train_latex": first, "normalized": normed})

    def add_timed(self, lines: Sequence[Line]) -> None:
        start = time.perf_counter()
        self.add_many(lines)
        self.test_seconds += time.perf_counter() - start

    def totals(self) -> dict:
        keys = ("labels", "exact", "normalized", "normalized_only", "not_normalizable")
        return {k: sum(f[k] for f in self.files) for k in keys}

    def rate(self) -> float:
        """The normalized overlap as a fraction of the counted labels (what --max-leak compares)."""
        t = self.totals()
        return t["normalized"] / t["labels"] if t["labels"] else 0.0

    def report(self, max_leak: float | None = None) -> dict:
        def with_rates(counts: dict) -> dict:
            n = counts["labels"]
            return {**counts, "exact_rate": counts["exact"] / n if n else 0.0,
                    "normalized_rate": counts["normalized"] / n if n else 0.0}

        return {
            "train_files": self.train_files, "train_labels": self.train_labels, "train_blank": self.train_blank,
            "train_skipped": dict(self.train_skipped), "train_distinct": len(self._exact),
            "train_distinct_normalized": len(self._normal),
            "train_not_normalizable": len(self._unnormalizable),
            "files": [with_rates(f) for f in self.files], "total": with_rates(self.totals()),
            "examples": self.examples,
            "max_leak": max_leak, "exceeded": max_leak is not None and self.rate() > max_leak,
            "train_seconds": round(self.train_seconds, 3), "test_seconds": round(self.test_seconds, 3),
        }


def format_report(r: dict) -> str:
    """The human-readable report."""
    out: list[str] = []
    w = out.append
    w(f"files: {', '.join(r['files'])}")
    skipped = sum(r["skipped"].values())
    w(f"lines: {r['lines']} expressions from {r['physical_lines']} physical lines; blank {r['blank']}; "
      f"skipped {skipped}" + (f" ({', '.join(f'{k} {v}' for k, v in r['skipped'].items())})" if skipped else "")
      + (f"; continuation lines joined into quoted fields {r['continuation_lines']}"
         if r["continuation_lines"] else ""))
    for reason, exs in r["skipped_examples"].items():
        for e in exs:
            w(f"  skipped {reason}: {e['where']}: {e['detail']}")
    n_invalid = sum(r["invalid"].values())
    w(f"accepted (lexes): {r['accepted']}; valid: {r['valid']}; invalid: {n_invalid}")
    for kind, count in r["invalid"].items():
        w(f"  {kind}: {count}")
        for e in r["invalid_examples"].get(kind, []):
            w(f"    {e['where']}: {e['latex'][:100]!r}: {e['detail']}")
    rt = r["round_trip"]
    w(f"round trip: token-exact {rt['token_exact']}/{r['accepted']}, string-exact (up to whitespace) "
      f"{rt['string_exact']}/{r['accepted']}, SAT failures {rt['sat_failures']}")
    for kind, exs in rt["examples"].items():
        for e in exs:
            w(f"  {kind} round-trip failure {e['where']}: {e['latex'][:100]!r}: {e['detail']}")
    L = r["lengths"]
    for key, label in (("raw_tokens", "raw tokens"), ("sat_positions", "SAT positions")):
        s = L[key]
        w(f"{label}: p50 {s['p50']}, p95 {s['p95']}, max {s['max']}; over {L['max_len']}: {s['over_max_len']}")
    inv = r["inventory"]
    w(f"inventory ({'extended' if inv['extended'] else 'paper'} modifier set, valid labels): "
      f"{inv['symbols']} symbols, {inv['modifiers']} modifiers")
    w("  top symbols: " + ", ".join(f"{s} {c}" for s, c in inv["top_symbols"]))
    w("  top modifiers (pre·post): " + ", ".join(f"{m or '·'} {c}" for m, c in inv["top_modifiers"]))
    if "oov" in r:
        o = r["oov"]
        w(f"OOV vs vocabulary: {o['labels_with_oov']}/{o['labels_checked']} labels ({o['label_rate']:.2%}), "
          f"{o['position_rate']:.2%} of positions")
        if o["symbols"]:
            w("  OOV symbols: " + ", ".join(f"{s} {c}" for s, c in o["symbols"]))
        if o["modifiers"]:
            w("  OOV modifiers: " + ", ".join(f"{m} {c}" for m, c in o["modifiers"]))
    if "normalize" in r:
        nz = r["normalize"]
        w(f"normalize would change {nz['changed']} of {r['accepted']} accepted labels"
          + (f" (failed on {nz['failed']})" if nz["failed"] else ""))
        for e in nz["examples"]:
            w(f"  {e['where']}: {e['latex'][:100]!r} -> {e['detail'][:100]!r}")
    if "leakage" in r:
        lk = r["leakage"]
        w(f"leakage against {', '.join(lk['train_files'])}: {lk['train_labels']} training labels, "
          f"{lk['train_distinct']} distinct ({lk['train_distinct_normalized']} after normalizing"
          + (f", {lk['train_not_normalizable']} not normalizable" if lk["train_not_normalizable"] else "")
          + f"; read in {lk['train_seconds']} s, test labels looked up in {lk['test_seconds']} s)")

        def counts(c: dict) -> str:
            return (f"{c['labels']} labels: exact {c['exact']} ({c['exact_rate']:.2%}), normalized "
                    f"{c['normalized']} ({c['normalized_rate']:.2%}; {c['normalized_only']} only after normalizing)"
                    + (f", not normalizable {c['not_normalizable']}" if c["not_normalizable"] else ""))
        for c in lk["files"]:
            w(f"  {c['file']}: {counts(c)}")
        if len(lk["files"]) > 1:
            w(f"  total: {counts(lk['total'])}")
        for e in lk["examples"]["exact"]:
            w(f"  exact: {e['where']}: {e['latex'][:100]!r} = {e['train']}")
        for e in lk["examples"]["normalized"]:
            w(f"  normalized: {e['where']}: {e['latex'][:100]!r} ~ {e['train']}: {e['train_latex'][:100]!r} "
              f"(both {e['normalized'][:100]!r})")
        for e in lk["examples"]["not_normalizable"]:
            w(f"  not normalizable: {e['where']}: {e['latex'][:100]!r}: {e['detail']}")
        if lk["max_leak"] is not None:
            w(f"  --max-leak {lk['max_leak']:g}: " + ("EXCEEDED" if lk["exceeded"] else "within"))
    if r["lines_per_second"]:
        w(f"throughput: {r['lines_per_second']} lines/s ({r['seconds']} s)")
    return "\n".join(out)


def _sources(names: Iterable[str], fmt: str, progress: bool, opened) -> Iterator[Iterable[Line | Skipped]]:
    """Each file's records in turn ('-' = stdin), after opened(display name); the file is closed when
    the next one is asked for. Raises OSError for a file that cannot be opened, NotACorpus for a binary one."""
    for name in names:
        stream, display = open_source(name)
        try:
            refuse_binary(stream, display)
            opened(display)
            records = read_corpus(stream, display, fmt)
            if progress:
                from tqdm import tqdm
                records = tqdm(records, desc=display, unit=" lines", leave=False)
            yield records
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()


def read_train(names: Iterable[str], leakage: Leakage, fmt: str = "auto", progress: bool = False) -> Leakage:
    """Index the training corpora of a --against check."""
    start = time.perf_counter()
    for records in _sources(names, fmt, progress, leakage.train_files.append):
        leakage.add_train(records)
    leakage.train_seconds = time.perf_counter() - start
    return leakage


def check_sources(names: Iterable[str], checker: CorpusCheck, fmt: str = "auto", progress: bool = False,
                  leakage: Leakage | None = None) -> CorpusCheck:
    """Run checker (and leakage, when given: its training corpora read already) over files ('-' = stdin).
    Raises OSError for a file that cannot be opened."""
    start = time.perf_counter()

    def opened(display: str) -> None:
        checker.files.append(display)
        if leakage is not None:
            leakage.start_file(display)

    for records in _sources(names, fmt, progress, opened):
        pending: list[Line] = []
        for rec in records:
            if isinstance(rec, Skipped):
                checker.add_skipped(rec)
            else:
                pending.append(rec)
                if len(pending) == BLOCK_LINES:
                    checker.add_many(pending)
                    if leakage is not None:
                        leakage.add_timed(pending)
                    pending = []
        checker.add_many(pending)
        if leakage is not None:
            leakage.add_timed(pending)
    checker.elapsed = time.perf_counter() - start - (leakage.test_seconds if leakage is not None else 0.0)
    return checker


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m tokenizer.check",
        description="Check a LaTeX label corpus: lexing, validation, round trips, SAT lengths, inventories.",
        epilog="Exit status: 0 every accepted line round-trips; 1 some line does not, or the leakage exceeds "
               "--max-leak (without --max-leak, --against only reports); 2 usage error.")
    p.add_argument("files", nargs="+", help="corpus files, one expression a line or name<TAB>latex; '-' = stdin")
    p.add_argument("--format", choices=FORMATS, default="auto",
                   help="force plain lines, name<TAB>latex, or caption lines (name, whitespace, latex: "
                        "CoMER/TAMER captions) (default: detect plain or tsv per file)")
    p.add_argument("--vocab", metavar="FILE", help="SAT vocabulary JSON to report out-of-vocabulary items against")
    p.add_argument("--vocab-out", metavar="FILE", help="save a SAT vocabulary built from the valid labels")
    p.add_argument("--min-count", type=int, default=1, help="minimum count for --vocab-out entries (default 1)")
    p.add_argument("--extended", action="store_true",
                   help="use the extended modifier set ([ ] of \\sqrt[n], \\left/\\right, \\limits)")
    p.add_argument("--max-len", type=int, default=150, help="maximum SAT length to report against (default 150)")
    p.add_argument("--normalize", action="store_true", help="also report what normalization would change")
    p.add_argument("--crohme", action="store_true",
                   help="clean CROHME InkML truths first ($...$, entities, \\lt/\\gt, line breaks)")
    p.add_argument("--show", type=int, default=3, metavar="N", help="examples to show per class (default 3)")
    p.add_argument("--top", type=int, default=15, metavar="K", help="inventory entries to list (default 15)")
    p.add_argument("--against", nargs="+", action="extend", metavar="TRAIN",
                   help="training corpora: report how many labels of FILES also occur in them, exactly and "
                        "after normalization, per file (give it after FILES, or repeat it)")
    p.add_argument("--max-leak", type=float, metavar="FRACTION",
                   help="with --against: exit 1 when more than FRACTION (0..1) of the labels occur in the "
                        "training corpora after normalization (default: report only)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="show a progress bar (default: when standard error is a terminal)")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.max_len < 1 or args.show < 0 or args.top < 0 or args.min_count < 1:
        parser.error("--max-len and --min-count must be >= 1, --show and --top >= 0")
    if args.files.count("-") + (args.against or []).count("-") > 1:
        parser.error("'-' (standard input) can be given once")
    if args.max_leak is not None and (args.against is None or not 0 <= args.max_leak <= 1):
        parser.error("--max-leak needs --against and a fraction from 0 to 1")
    vocab = None
    if args.vocab:
        try:
            vocab = SATVocab.load(args.vocab)
        except ValueError as exc:
            parser.error(f"--vocab: {exc}")
    checker = CorpusCheck(vocab=vocab, max_len=args.max_len, extended=args.extended, do_normalize=args.normalize,
                          crohme=args.crohme, show=args.show)
    leakage = Leakage(crohme=args.crohme, show=args.show) if args.against else None
    try:
        progress = sys.stderr.isatty() if args.progress is None else args.progress
        if leakage is not None:
            read_train(args.against, leakage, args.format, progress=progress)
        check_sources(args.files, checker, args.format, progress=progress, leakage=leakage)
    except OSError as exc:
        print(f"error: cannot read {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except NotACorpus as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    report = checker.report(top=args.top)
    if leakage is not None:
        report["leakage"] = leakage.report(args.max_leak)
    if args.vocab_out:
        out_vocab = SATVocab.from_counts(+checker.symbols, +checker.modifiers, extended=args.extended,
                                         min_count=args.min_count)
        try:
            out_vocab.save(args.vocab_out)
        except OSError as exc:
            print(f"error: cannot write {args.vocab_out}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        report["vocab_out"] = {"path": args.vocab_out, "symbols": out_vocab.num_symbols,
                               "modifiers": out_vocab.num_modifiers}
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
    else:
        print(format_report(report))
        if args.vocab_out:
            v = report["vocab_out"]
            print(f"vocabulary saved to {v['path']}: {v['symbols']} symbols, {v['modifiers']} modifiers")
    leaked = leakage is not None and report["leakage"]["exceeded"]
    return 1 if checker.round_trip_failures() or leaked else 0


def _run() -> int:
    try:
        return main()
    except BrokenPipeError:  # `| head`: the reader left; not an error worth a traceback
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0


if __name__ == "__main__":
    sys.exit(_run())
