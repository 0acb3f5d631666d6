"""The converter behind `python -m datasets_prep.inkml` and `python -m datasets_prep.images`:
any source's inputs -> rendered or fitted images -> Arrow shards.

Inputs are cut into chunks of --shard-size items in a fixed order; each chunk becomes one shard,
written by a worker process, atomically. A completion record per shard under <out>/.progress makes
`--resume` after a crash (even kill -9) redo only unfinished shards, with no row lost or doubled.
Every input ends as a row or as a line of <out>/quarantine.jsonl (path, stage, error);
<out>/summary.json has the counts per split and per error class, the time and files/s. Which dataset
it is only matters to the source module (datasets_prep/sources/) that lists and loads the items.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import time
from collections import Counter
from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from tokenizer.files import atomic_write

from . import sources as sources_mod
from .names import plain_name
from .readers import MAX_BYTES, MAX_POINTS, MIN_POINTS, InkError
from .render import ANTIALIAS, DEFAULT_ANTIALIAS, DEFAULT_MARGIN, DEFAULT_STROKE_WIDTH, parse_size
from .render_spec import DEFAULT_SIZE, RenderSpec
from .shards import (DICT_FILE, MAX_SHARD_BYTES, schema, write_dataset_dict, write_json, write_split_metadata,
                     write_table)
from .sources import SOURCES, Item, iter_items, sort_splits
from .worker import ChunkResult, Options, convert_chunk

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
PROGRESS = ".progress"
QUARANTINE = "quarantine.jsonl"
SUMMARY = "summary.json"
PREVIEW = "preview.png"
CHUNK_BYTES = 64 << 20
"""A chunk is cut early when the input bytes it holds in memory (archive members, decoded pickle
images) reach this, whatever --shard-size says: with the per-member cap (--max-file-mb) this bounds
what one chunk holds."""
IN_FLIGHT_BYTES = 256 << 20
"""Input bytes handed to workers and not yet written: more waits for a chunk to finish. With
CHUNK_BYTES and the member cap, the converter's memory stays bounded whatever the shard size."""


def item_bytes(item: Item) -> int:
    """The input bytes an item holds in memory (0 for a file read later by the worker)."""
    return (len(item.data) if item.data is not None else 0) + (
        int(getattr(item.pixels, "nbytes", 0)) if item.pixels is not None else 0)


EXIT_CODES = ("exit codes: 0 done (files that could not be converted are listed in quarantine.jsonl); "
              "1 nothing converted, a broken archive, a worker died, the output could not be written (disk "
              "full), an internal error, or --strict with anything quarantined; 2 usage error (bad options, "
              "or an --out that is a file, not writable or not ours); 130 interrupted (continue with --resume)")


class UsageError(Exception):
    """Bad options or an output folder that cannot be used: exit code 2, one line, no traceback."""


def default_inputs(src: str) -> list[Path]:
    """The bundled fixtures (written by datasets_prep.synth): the embedded default of the InkML sources."""
    if sources_mod.get(src).KIND != "ink":
        raise UsageError(f"--src {src} needs --input (the bundled fixtures are InkML; "
                         "python -m datasets_prep.export writes image datasets from shards)")
    root = FIXTURES / src
    several = getattr(sources_mod.get(src), "fixture_inputs", None)  # a source whose fixtures are several inputs
    found = [] if not root.is_dir() else several(root) if several else [root]
    if not found:
        raise UsageError(f"no --input given and no bundled fixtures at {root} "
                         "(regenerate them with: python -m datasets_prep.synth --fixtures)")
    return found


# ---------------------------------------------------------------- output folder and resume

def _prepare_out(out: Path, plan: dict, resume: bool, overwrite: bool) -> None:
    """Check `out` can take this run and record its plan; UsageError (exit 2) naming the reason."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a folder")
    try:
        _prepare_out_checked(out, plan, resume, overwrite)
    except OSError as e:  # read-only, no permission, full
        raise UsageError(f"--out {out} cannot be written: {e.strerror or e}") from None


def _prepare_out_checked(out: Path, plan: dict, resume: bool, overwrite: bool) -> None:
    progress = out / PROGRESS
    if out.exists() and any(out.iterdir()):
        ours = (progress / "plan.json").is_file() or (out / DICT_FILE).is_file()
        if resume:
            if not ours:
                raise UsageError(f"{out}: nothing to resume (no {PROGRESS}/plan.json)")
            old = json.loads((progress / "plan.json").read_text())
            diffs = sorted(k for k in set(old) | set(plan) if old.get(k) != plan.get(k))
            if diffs == ["fingerprint"]:
                raise UsageError(f"{out}: cannot resume, the input files changed since the interrupted run (a file "
                                 "added, removed, resized or rewritten); use --overwrite to convert them again")
            if diffs:
                detail = ", ".join(f"{k}: {old.get(k)!r} -> {plan.get(k)!r}" for k in diffs)
                raise UsageError(f"{out}: cannot resume, the options/inputs differ ({detail}); use --overwrite")
            _clean_temp(out)
            write_json(progress / "plan.json", plan)  # proves the folder is still writable
            return
        if not overwrite:
            raise UsageError(f"{out} exists and is not empty: pass --resume to continue it or --overwrite")
        if not ours:
            raise UsageError(f"{out} does not look like a shard folder written by this tool; refusing to delete it")
        shutil.rmtree(out)
    (progress).mkdir(parents=True, exist_ok=True)
    write_json(progress / "plan.json", plan)


def input_fingerprint(paths: list[Path]) -> str:
    """A digest of the input listing: every file's relative name, size, modification and change times
    and inode (the archive's own for an archive). --resume refuses when it changed, so a file replaced
    between the runs (same count, other content) is never left out in silence: a same-size swap whose
    mtime was restored still has a new ctime (no user can set it) and usually a new inode. Costs one
    stat per file."""
    h = hashlib.blake2b(digest_size=16)
    for k, p in enumerate(paths):
        h.update(f"input {k}\0".encode())
        if p.is_dir():
            for dirpath, dirnames, filenames in os.walk(p, followlinks=False):
                dirnames.sort()
                for f in sorted(filenames) + sorted(d for d in dirnames if os.path.islink(os.path.join(dirpath, d))):
                    full = os.path.join(dirpath, f)
                    try:
                        st = os.stat(full)
                    except OSError:
                        st = os.lstat(full)
                    h.update(f"{os.path.relpath(full, p)}\0{_stamp(st)}\0{st.st_mode}\n".encode())
        else:
            st = p.stat()
            h.update(f"{_stamp(st)}\n".encode())
    return h.hexdigest()


def _stamp(st: os.stat_result) -> str:
    return f"{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}"


def _clean_temp(out: Path) -> None:
    for p in out.rglob(".*.tmp-*"):
        p.unlink(missing_ok=True)


def _marker(out: Path, split: str, index: int) -> Path:
    return out / PROGRESS / split / f"{index:05d}.json"


def _load_marker(out: Path, split: str, index: int, chunk: list[Item]) -> ChunkResult | None:
    path = _marker(out, split, index)
    if not path.is_file():
        return None
    try:
        res = ChunkResult(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None  # a marker is written atomically; an unreadable one is redone
    if (res.n_inputs, res.first_path, res.last_path) != (len(chunk), chunk[0].path, chunk[-1].path):
        raise UsageError(f"{out}: cannot resume, the inputs of shard {split}/{index} changed since the interrupted "
                         "run; use --overwrite")
    if not all((out / split / f).is_file() for f in res.files):
        return None
    return res


# ---------------------------------------------------------------- the run

class _Runner:
    """Feeds chunks to workers (or runs them inline with --workers 1) and collects the results."""

    def __init__(self, out: Path, opts: Options, workers: int, progress):
        self.out, self.opts, self.workers, self.bar = out, opts, workers, progress
        self.pool = ProcessPoolExecutor(workers, mp_context=_mp_context(), initializer=_die_with_parent,
                                        initargs=(os.getpid(),)) if workers > 1 else None
        self.pending: dict[Future, tuple[str, int, int]] = {}
        self.results: dict[tuple[str, int], ChunkResult] = {}
        self.resumed = 0
        self.processed = 0

    def submit(self, split: str, index: int, chunk: list[Item], resume: bool) -> None:
        done = _load_marker(self.out, split, index, chunk) if resume else None
        if done is not None:
            self.results[(split, index)] = done
            self.resumed += 1
            self.bar.update(len(chunk))
            return
        split_dir = self.out / plain_name(split)
        split_dir.mkdir(parents=True, exist_ok=True)
        if self.pool is None:
            self._finish(convert_chunk(split, index, chunk, str(split_dir), self.opts))
            return
        nbytes = sum(map(item_bytes, chunk))
        while self.pending and (len(self.pending) >= 2 * self.workers
                                or self._in_flight() + nbytes > IN_FLIGHT_BYTES):
            self._drain(FIRST_COMPLETED)
        fut = self.pool.submit(convert_chunk, split, index, chunk, str(split_dir), self.opts)
        self.pending[fut] = (split, index, nbytes)

    def _in_flight(self) -> int:
        return sum(n for _, _, n in self.pending.values())

    def _drain(self, how) -> None:
        done, _ = wait(list(self.pending), return_when=how)
        for fut in done:
            self.pending.pop(fut)
            self._finish(fut.result())

    def _finish(self, res: ChunkResult) -> None:
        write_json(_marker_dir(self.out, res.split) / f"{res.index:05d}.json", res.to_json())
        self.results[(res.split, res.index)] = res
        self.processed += res.n_inputs
        self.bar.update(res.n_inputs)

    def close(self) -> None:
        if self.pending:
            self._drain(ALL_COMPLETED)
        if self.pool is not None:
            self.pool.shutdown()

    def abort(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


def _marker_dir(out: Path, split: str) -> Path:
    d = out / PROGRESS / split
    d.mkdir(parents=True, exist_ok=True)
    return d


def _die_with_parent(parent: int) -> None:
    """Worker initializer: a worker whose parent is gone (kill -9) exits instead of living on.

    Linux delivers SIGTERM at the parent's death (prctl PR_SET_PDEATHSIG); everywhere, a daemon thread
    also checks once a second that the parent is still the one that started it."""
    import ctypes
    import signal
    import threading
    import time

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(1)
            time.sleep(1.0)

    threading.Thread(target=watch, daemon=True, name="die-with-parent").start()
    if os.getppid() != parent:  # the parent died before the initializer ran
        os._exit(1)


def _mp_context():
    import multiprocessing as mp
    return mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()


def convert(src: str, inputs: list[str | Path] | None = None, out: str | Path | None = None, *,
            splits: list[str] | None = None, split: str | None = None, limit: int | None = None,
            size: tuple[int, int] | str = DEFAULT_SIZE, stroke_width: float = DEFAULT_STROKE_WIDTH,
            margin: float = DEFAULT_MARGIN, antialias: str = DEFAULT_ANTIALIAS, max_glyph: float = 0.0,
            workers: int | None = None,
            shard_size: int = 1000, max_shard_bytes: int = MAX_SHARD_BYTES, keep_ink: bool = False,
            drop_invalid: bool = False, preview: int = 0, resume: bool = False, overwrite: bool = False,
            max_bytes: int = MAX_BYTES, max_points: int = MAX_POINTS, min_points: int = MIN_POINTS,
            binarize: bool = False, render: RenderSpec | None = None, progress: bool = False, log=None) -> dict:
    """Convert a source's inputs to shards under `out`; returns the summary (also written to summary.json).

    inputs=None converts the bundled fixtures. `render` gives the drawing settings whole (a model's
    RenderSpec, say); without it they come from size, stroke_width, margin, antialias, max_glyph and
    binarize. Raises UsageError on bad options or an unusable `out`.
    """
    log = log or (lambda msg: None)
    if src not in SOURCES:
        raise UsageError(f"--src must be one of {', '.join(SOURCES)}, got {src!r}")
    if inputs is None:
        paths = default_inputs(src)
        log(f"no --input: converting the bundled fixtures in {FIXTURES / src} "
            "(synthetic inks, see fixtures/README.md)")
    else:
        paths = [Path(p) for p in inputs]
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            raise UsageError(f"input not found: {', '.join(missing)}")
    try:  # split names become folders under `out`: plain names only, checked here at the boundary
        for name in ([split] if split is not None else []) + list(splits or []):
            plain_name(name, "--split" if name == split else "--splits name")
    except ValueError as e:
        raise UsageError(str(e)) from None
    if split is not None and len(paths) > 1 and getattr(sources_mod.get(src), "SPLIT_OF_ONE_INPUT", False):
        raise UsageError("--split names the split of a single input; give one --input with it")
    if shard_size < 1 or (limit is not None and limit < 0):
        raise UsageError("--shard-size must be >= 1, --limit >= 0")
    try:  # one RenderSpec, checked once (render_spec.py), then passed whole
        if render is None:
            render = RenderSpec(parse_size(size) if isinstance(size, str) else size, float(stroke_width),
                                float(margin), antialias, float(max_glyph), binarize)
        from .render import fit
        fit((0, 0, 1, 1), render.size, render.stroke_width, render.margin)
    except ValueError as e:  # RenderSpecError included
        raise UsageError(f"{e} (--size, --stroke-width, --margin, --antialias, --max-glyph)") from None
    opts = Options(src=src, render=render, keep_ink=keep_ink, drop_invalid=drop_invalid, shard_size=shard_size,
                   max_shard_bytes=max_shard_bytes, max_bytes=max_bytes, max_points=max_points, min_points=min_points)
    out = Path(out) if out is not None else Path("shards") / src
    workers = max(1, workers or _cpu_count())
    plan = {"options": opts.to_json(), "inputs": [str(p.resolve()) for p in paths], "splits": splits,
            "split": split, "limit": limit, "fingerprint": input_fingerprint(paths)}
    _prepare_out(out, plan, resume, overwrite)

    t0 = time.perf_counter()
    from tqdm import tqdm
    total = _count_files(paths, src) if progress and limit is None else None
    bar = tqdm(total=total, unit="files", desc=f"{src} -> {out}", disable=not progress, dynamic_ncols=True)
    runner = _Runner(out, opts, workers, bar)
    enum_errors: list[dict] = []
    counts: Counter = Counter()
    buffers: dict[str, list[Item]] = {}
    held: Counter = Counter()  # input bytes in each split's buffer
    next_index: Counter = Counter()
    try:
        wanted = set(splits) if splits else None
        for got in iter_items(src, paths, splits=wanted, split_override=split, max_bytes=max_bytes):
            if isinstance(got, InkError):
                enum_errors.append(got.record())
                bar.update(1)
                continue
            if limit is not None and counts[got.split] >= limit:
                continue
            counts[got.split] += 1
            buf = buffers.setdefault(got.split, [])
            buf.append(got)
            held[got.split] += item_bytes(got)
            if len(buf) >= shard_size or held[got.split] >= CHUNK_BYTES:
                runner.submit(got.split, next_index[got.split], buf, resume)
                next_index[got.split] += 1
                buffers[got.split] = []
                held[got.split] = 0
        for s, buf in buffers.items():
            if buf:
                runner.submit(s, next_index[s], buf, resume)
                next_index[s] += 1
        runner.close()
    except BaseException:
        runner.abort()
        bar.close()
        raise
    bar.close()
    summary = _finalize(out, src, paths, opts, runner, enum_errors, time.perf_counter() - t0, workers)
    if preview:
        from .contact import write_preview
        write_preview(out, summary["split_names"], preview, out / PREVIEW)
        summary["preview"] = str(out / PREVIEW)
        write_json(out / SUMMARY, summary)
    return summary


def _count_files(paths: list[Path], src: str) -> int | None:
    """Input files under folder inputs, for the progress bar; None when an archive is streamed or
    the images sit in a pickle."""
    if any(not p.is_dir() for p in paths) or not getattr(sources_mod.get(src), "COUNTABLE", True):
        return None
    from .sources.pairing import IMAGE_SUFFIXES
    kind = sources_mod.get(src).KIND
    suffixes = (".inkml",) if kind == "ink" else IMAGE_SUFFIXES if kind == "image" else (".inkml", *IMAGE_SUFFIXES)
    return sum(f.lower().endswith(suffixes) for p in paths for _, _, files in os.walk(p) for f in files)


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _finalize(out: Path, src: str, paths: list[Path], opts: Options, runner: _Runner, enum_errors: list[dict],
              seconds: float, workers: int) -> dict:
    """Per-split metadata, dataset_dict.json, quarantine.jsonl and summary.json from the results."""
    by_split: dict[str, list[ChunkResult]] = {}
    for (s, i), res in sorted(runner.results.items()):
        by_split.setdefault(s, []).append(res)
    names = sort_splits(by_split)
    errors: Counter = Counter()
    per_split = {}
    quarantine = list(enum_errors)
    for rec in enum_errors:
        errors[f"{rec['stage']}:{rec['kind']}"] += 1
    for s in names:
        results = by_split[s]
        files = [f for r in results for f in r.files]
        lengths = [n for r in results for n in r.shard_lengths]
        nbytes = sum(r.num_bytes for r in results)
        split_dir = out / plain_name(s)
        split_dir.mkdir(parents=True, exist_ok=True)
        if not files:  # every input failed: an empty shard keeps the split loadable
            files, lengths = ["data-00000.arrow"], [0]
            nbytes = write_table(schema(opts.keep_ink).empty_table(), split_dir / files[0])
        _remove_unlisted(split_dir, set(files))
        write_split_metadata(split_dir, s, files, lengths, nbytes, opts.keep_ink)
        split_errors: Counter = Counter()
        for r in results:
            quarantine.extend(r.quarantine)
            split_errors.update(r.error_counts)
        errors.update(split_errors)
        per_split[s] = {"inputs": sum(r.n_inputs for r in results), "rows": sum(lengths),
                        "quarantined": sum(len(r.quarantine) for r in results),
                        "invalid_labels": sum(r.invalid_labels for r in results),
                        "shards": len(files), "bytes": nbytes, "errors": dict(sorted(split_errors.items()))}
        dups = _duplicate_ids(split_dir, files)
        if dups:
            per_split[s]["duplicate_ids"] = dups
    write_dataset_dict(out, names)
    atomic_write(out / QUARANTINE, "".join(json.dumps(rec, ensure_ascii=False) + "\n" for rec in quarantine))
    total_inputs = sum(v["inputs"] for v in per_split.values()) + len(enum_errors)
    summary = {
        "source": src, "inputs": [str(p) for p in paths], "out": str(out), "options": opts.to_json(),
        "split_names": names, "splits": per_split,
        "totals": {"inputs": total_inputs, "rows": sum(v["rows"] for v in per_split.values()),
                   "quarantined": len(quarantine), "outside_any_split": len(enum_errors),
                   "invalid_labels": sum(v["invalid_labels"] for v in per_split.values())},
        "errors": dict(sorted(errors.items())),
        "seconds": round(seconds, 3), "workers": workers,
        "processed_this_run": runner.processed, "resumed_shards": runner.resumed,
        "files_per_s": round(runner.processed / seconds, 1) if seconds > 0 else None,
    }
    write_json(out / SUMMARY, summary)
    return summary


def _duplicate_ids(split_dir: Path, files: list[str]) -> dict | None:
    """Sample ids given to more than one row of the split (two files whose `sampleId` annotations
    agree, say): counted and named in summary.json, never silently merged. Reads only the id column."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .shards import read_shard
    ids = pa.chunked_array([read_shard(split_dir / f).column("sample_id") for f in files])
    counts = pc.value_counts(ids)
    repeated = [(v.as_py(), c.as_py()) for v, c in zip(counts.field("values"), counts.field("counts")) if c.as_py() > 1]
    if not repeated:
        return None
    return {"ids": len(repeated), "rows": sum(c for _, c in repeated), "examples": [v for v, _ in repeated[:5]]}


def _remove_unlisted(split_dir: Path, keep: set[str]) -> None:
    """Shard files a previous, different attempt left behind (never listed, so never loaded)."""
    for p in split_dir.glob("data-*.arrow"):
        if p.name not in keep:
            p.unlink()


# ---------------------------------------------------------------- CLI

class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows defaults, except the None/False ones whose help already says what happens."""

    def _get_help_string(self, action):
        if action.default in (None, False):
            return action.help
        return super()._get_help_string(action)


def parser(prog: str, description: str, choices: tuple[str, ...], images: bool) -> argparse.ArgumentParser:
    """The converter's options, shared by the InkML and the image command (`images` adds --binarize)."""
    p = argparse.ArgumentParser(prog=prog, description=description, formatter_class=_DefaultsFormatter,
                                epilog=EXIT_CODES)
    p.add_argument("--src", required=True, choices=choices, help="dataset the inputs come from")
    if images:
        p.add_argument("--input", nargs="+", metavar="PATH", required=True,
                       help="folders or .zip/.tar archives laid out as --src says (tamer: the extracted folder)")
    else:
        p.add_argument("--input", nargs="+", metavar="PATH",
                       help="folders, .tgz/.tar/.zip archives or .inkml files (default: the bundled fixtures)")
    p.add_argument("--out", help="output folder (default: shards/<src>)")
    p.add_argument("--splits", nargs="+", metavar="NAME", help="convert only these splits")
    p.add_argument("--split", metavar="NAME", help="split name for the input (default: its folder/archive name)")
    p.add_argument("--limit", type=int, metavar="N", help="at most N files per split")
    p.add_argument("--size", default="x".join(map(str, DEFAULT_SIZE)), metavar="HxW",
                   help="canvas size (the paper's; e.g. 96x384 for CROHME on a CPU)")
    p.add_argument("--stroke-width", type=float, default=DEFAULT_STROKE_WIDTH, help="stroke width in pixels")
    p.add_argument("--margin", type=float, default=DEFAULT_MARGIN, help="blank pixels around the ink")
    p.add_argument("--antialias", choices=sorted(ANTIALIAS), default=DEFAULT_ANTIALIAS,
                   help="cairo anti-aliasing: fast (4x4 supersampling), best (cairo default), none")
    p.add_argument("--workers", type=int, default=None, help="worker processes (default: all cores)")
    p.add_argument("--shard-size", type=int, default=1000, help="input files per shard")
    p.add_argument("--max-shard-mb", type=int, default=MAX_SHARD_BYTES >> 20, help="byte cap per shard file")
    if images:
        p.add_argument("--binarize", action="store_true",
                       help="Otsu-threshold the ink (camera photos such as HME100K, JPEG noise)")
    else:
        p.add_argument("--max-glyph", type=float, default=0.0, metavar="PX",
                       help="draw glyphs at most PX pixels large (the median stroke extent), so a short "
                            "expression is not blown up to the canvas height; 0 = fit every ink to the canvas")
        p.add_argument("--keep-ink", action="store_true", help="store the strokes too (column `strokes`)")
    p.add_argument("--drop-invalid", action="store_true",
                   help="leave out samples whose label fails the tokenizer's check (they go to quarantine.jsonl)")
    p.add_argument("--preview", type=int, default=0, metavar="N", help="write preview.png with N samples")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--resume", action="store_true", help="continue an interrupted run in --out")
    g.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    p.add_argument("--strict", action="store_true", help="exit 1 if any input was quarantined")
    p.add_argument("--max-points", type=int, default=MAX_POINTS, help="quarantine inks with more points")
    p.add_argument("--min-points", type=int, default=MIN_POINTS, help="quarantine inks with fewer points")
    p.add_argument("--max-file-mb", type=float, default=MAX_BYTES / 2**20, help="quarantine larger files")
    p.add_argument("--quiet", action="store_true", help="no progress bar or report")
    return p


def main(argv: list[str] | None, p: argparse.ArgumentParser) -> int:
    """Parse, convert, report; the exit code as EXIT_CODES says."""
    args = p.parse_args(argv)
    say = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr))
    try:
        summary = convert(args.src, args.input, args.out, splits=args.splits, split=args.split, limit=args.limit,
                          size=args.size, stroke_width=args.stroke_width, margin=args.margin,
                          antialias=args.antialias, max_glyph=getattr(args, "max_glyph", 0.0),
                          workers=args.workers,
                          shard_size=args.shard_size, max_shard_bytes=args.max_shard_mb << 20,
                          keep_ink=getattr(args, "keep_ink", False), binarize=getattr(args, "binarize", False),
                          drop_invalid=args.drop_invalid, preview=args.preview,
                          resume=args.resume, overwrite=args.overwrite, max_bytes=int(args.max_file_mb * 2**20),
                          max_points=args.max_points, min_points=args.min_points, progress=not args.quiet, log=say)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; run again with --resume to continue", file=sys.stderr)
        return 130
    except OSError as e:  # writing a shard or a report failed: a full disk, a folder gone read-only
        print(f"error: {e.filename or args.out or 'the output folder'}: {e.strerror or e} (finished shards are "
              "kept: fix it and run again with --resume)", file=sys.stderr)
        return 1
    except BrokenProcessPool as e:
        print(f"error: a worker process died ({e or 'killed or out of memory'}); finished shards are kept: "
              "run again with --resume", file=sys.stderr)
        return 1
    say(_report(summary))
    t = summary["totals"]
    if any(k.startswith("internal:") for k in summary["errors"]):
        print("error: some files hit an internal error (a bug, not bad input; see quarantine.jsonl): please "
              "report it", file=sys.stderr)
        return 1
    if t["rows"] == 0 or (args.strict and t["quarantined"]):
        return 1
    if any(r["kind"] == "broken-archive" for r in _quarantine(summary)):
        return 1
    return 0


def _quarantine(summary: dict) -> list[dict]:
    path = Path(summary["out"]) / QUARANTINE
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _report(summary: dict) -> str:
    lines = [f"{summary['out']}: {summary['totals']['rows']} rows from {summary['totals']['inputs']} inputs in "
             f"{summary['seconds']:.1f} s ({summary['files_per_s']} files/s, {summary['workers']} workers"
             + (f", {summary['resumed_shards']} shards resumed" if summary["resumed_shards"] else "") + ")"]
    for s, v in summary["splits"].items():
        lines.append(f"  {s}: {v['rows']} rows, {v['quarantined']} quarantined, {v['invalid_labels']} invalid "
                     f"labels, {v['shards']} shards, {v['bytes'] / 2**20:.1f} MB")
        if v.get("duplicate_ids"):
            d = v["duplicate_ids"]
            lines.append(f"  warning: {s} has {d['ids']} sample ids shared by {d['rows']} rows "
                         f"(e.g. {', '.join(d['examples'][:3])}): the inputs repeat an id")
    if summary["errors"]:
        lines.append("  quarantined by class: " + ", ".join(f"{k} {n}" for k, n in summary["errors"].items())
                     + f"  (details: {Path(summary['out']) / QUARANTINE})")
    if summary.get("preview"):
        lines.append(f"  preview: {summary['preview']}")
    return "\n".join(lines)

