"""`python -m datasets_prep.export`: shards out in the layouts other HMER codebases load.

    python -m datasets_prep.export --to comer --data shards/crohme --out export/comer   # -> data.zip
    python -m datasets_prep.export --to tamer --data shards/crohme --out export/tamer   # -> <split>/images.pkl

comer: `data.zip` holding `data/<split>/caption.txt` and `data/<split>/img/<name>.bmp` (CoMER, BTTR,
PosFormer). tamer: `<split>/images.pkl` (a dict name -> uint8 array) and `<split>/caption.txt`
(TAMER, ICAL). Both write the peers' byte conventions: 8-bit grey images, white ink on black (their
batches pad with zeros), cropped to the ink with --pad pixels around it; caption lines
`name<TAB>tokens` with the tokenizer's tokens joined by single spaces, UTF-8, `\\n`. A sample's name
is its id's last path part when those are unique in the split, else the id with `/` -> `_` (see
`export_names`). A row whose label does not tokenize is left out and listed in export.json.
"""
from __future__ import annotations

import argparse
import io
import os
import pickle
import sys
import zipfile
from pathlib import Path

import numpy as np
from PIL import Image

from tokenizer.files import atomic_write

from .convert import _DefaultsFormatter
from .captions import to_caption
from .names import plain_name
from .shards import ShardError, load_split, split_names, write_json

FORMATS = ("comer", "tamer")
EXIT_CODES = ("exit codes: 0 written; 1 nothing to export, a shard unreadable, or the output could not be written "
              "(disk full); 2 usage error (bad options, a --data that is not a shard folder, an --out that is a "
              "file, not empty or not writable)")


class UsageError(Exception):
    """Bad options or an unusable --out: exit 2, one line."""


def export_names(sample_ids: list[str]) -> list[str]:
    """File-safe, whitespace-free, non-empty names, unique in the split (the peers split caption
    lines on whitespace and build paths from names): the id's last path part when those are unique,
    else the whole id with `/` -> `_`, and a counter for what still collides (never merged)."""
    def clean(s: str) -> str:
        s = "_".join(s.split()).replace("\\", "_").replace("/", "_").strip(".")
        return s or "sample"
    base = [clean(s.rsplit("/", 1)[-1]) for s in sample_ids]
    if len(set(base)) == len(base):
        return base
    out: list[str] = []
    taken: set[str] = set()
    for name in (clean(s) for s in sample_ids):
        n, k = name, 1
        while n in taken:
            k += 1
            n = f"{name}_{k}"
        taken.add(n)
        out.append(n)
    return out


def caption_tokens(latex: str) -> str | None:
    """The label as the peers' captions spell it: tokens joined by single spaces, a space token
    (text mode's, or the control space) as `\\space` (datasets_prep/captions.py); None if it does not tokenize."""
    from tokenizer import LatexError, tokenize

    try:
        return to_caption(tokenize(latex))
    except LatexError:
        return None


def peer_image(png: bytes, pad: int) -> np.ndarray:
    """A shard image (black on white) -> uint8 white-on-black, cropped to the ink plus `pad` pixels."""
    a = 255 - np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=np.uint8)
    ys, xs = np.nonzero(a > 0)
    if len(ys) == 0:
        return a
    y0, y1 = max(0, ys.min() - pad), min(a.shape[0], ys.max() + 1 + pad)
    x0, x1 = max(0, xs.min() - pad), min(a.shape[1], xs.max() + 1 + pad)
    return np.ascontiguousarray(a[y0:y1, x0:x1])


def _bmp(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(a, mode="L").save(buf, format="BMP")
    return buf.getvalue()


def prepare_out(out: Path, overwrite: bool) -> None:
    """--out must be a folder that is empty (or --overwrite) and writable; UsageError saying why."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a folder")
    try:
        if out.exists() and any(out.iterdir()) and not overwrite:
            raise UsageError(f"{out} exists and is not empty: pass --overwrite")
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"--out {out} cannot be written: {e.strerror or e}") from None


def export(data: str | Path, out: str | Path, to: str, *, splits: list[str] | None = None,
           rename: dict[str, str] | None = None, pad: int = 2, overwrite: bool = False, log=None) -> dict:
    """Write the shards under `data` in the `to` layout under `out`; returns (and writes) export.json."""
    log = log or (lambda msg: None)
    if to not in FORMATS:
        raise UsageError(f"--to must be one of {', '.join(FORMATS)}, got {to!r}")
    if not isinstance(pad, int) or pad < 0:
        raise UsageError(f"--pad must be >= 0 (blank pixels around the ink), got {pad}")
    data, out = Path(data), Path(out)
    try:
        names = split_names(data)
    except ShardError as e:
        raise UsageError(f"{data}: not a shard folder ({e})") from None
    wanted = [s for s in names if splits is None or s in splits]
    if splits and set(splits) - set(names):
        raise UsageError(f"no split {', '.join(sorted(set(splits) - set(names)))} in {data} (has {', '.join(names)})")
    rename = rename or {}
    try:  # every name that becomes a folder or a member path is a plain name (datasets_prep/names.py)
        for old, new in rename.items():
            plain_name(old, "--rename source")
            plain_name(new, "--rename target")
    except ValueError as e:
        raise UsageError(str(e)) from None
    dests = [rename.get(s, s) for s in wanted]
    if len(set(dests)) != len(dests):
        raise UsageError(f"--rename gives two splits the same name ({', '.join(dests)})")
    target = out / "data.zip" if to == "comer" else out
    prepare_out(out, overwrite)
    report = {"to": to, "data": str(data), "out": str(out), "pad": pad, "splits": {}, "skipped": []}
    zf = None
    tmp_zip = out / ".data.zip.tmp"
    if to == "comer":
        zf = zipfile.ZipFile(tmp_zip, "w", zipfile.ZIP_DEFLATED)
    try:
        for split in wanted:
            table = load_split(data / split)
            ids = table.column("sample_id").to_pylist()
            file_names = export_names(ids)
            latex = table.column("latex").to_pylist()
            pngs = table.column("image")  # rows read one at a time: a split's images can be GBs
            dest = rename.get(split, split)
            lines, images = [], {}
            for i, (sid, name, lab) in enumerate(zip(ids, file_names, latex)):
                cap = caption_tokens(lab)
                if cap is None:
                    report["skipped"].append({"split": split, "sample_id": sid, "reason": "label does not tokenize"})
                    continue
                try:
                    img = peer_image(pngs[i]["bytes"].as_py() or b"", pad)
                except (OSError, ValueError, SyntaxError) as e:  # a damaged shard row: left out, listed
                    report["skipped"].append({"split": split, "sample_id": sid, "reason": f"image unreadable: {e}"})
                    continue
                lines.append(f"{name}\t{cap}\n")
                if zf is not None:
                    zf.writestr(f"data/{dest}/img/{name}.bmp", _bmp(img))
                else:
                    images[name] = img
            caption = "".join(lines).encode("utf-8")
            if zf is not None:
                zf.writestr(f"data/{dest}/caption.txt", caption)
            else:
                d = out / dest
                d.mkdir(parents=True, exist_ok=True)
                atomic_write(d / "caption.txt", caption)
                atomic_write(d / "images.pkl", pickle.dumps(images, protocol=4))
            report["splits"][split] = {"as": dest, "rows": table.num_rows, "written": len(lines)}
            log(f"  {split} -> {dest}: {len(lines)} of {table.num_rows} rows")
        if zf is not None:
            zf.close()
            zf = None
            os.replace(tmp_zip, target)
    finally:
        if zf is not None:
            zf.close()
        tmp_zip.unlink(missing_ok=True)
    report["target"] = str(target)
    write_json(out / "export.json", report)
    return report


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m datasets_prep.export", description=__doc__.split("\n\n")[0],
                                formatter_class=_DefaultsFormatter, epilog=EXIT_CODES)
    p.add_argument("--to", required=True, choices=FORMATS, help="layout to write")
    p.add_argument("--data", required=True, help="shard folder (written by datasets_prep.inkml/images)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--splits", nargs="+", metavar="NAME", default=None, help="export only these splits (default: all)")
    p.add_argument("--rename", nargs="+", metavar="OLD=NEW", default=None,
                   help="split names in the output, e.g. test2014=2014 as CoMER names its test sets")
    p.add_argument("--pad", type=int, default=2, help="blank pixels kept around the ink's crop")
    p.add_argument("--overwrite", action="store_true", help="write into a non-empty --out")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        rename = dict(r.split("=", 1) for r in args.rename or [])
    except ValueError:
        print("error: --rename takes OLD=NEW pairs", file=sys.stderr)
        return 2
    try:
        rep = export(args.data, args.out, args.to, splits=args.splits, rename=rename, pad=args.pad,
                     overwrite=args.overwrite, log=lambda m: print(m, file=sys.stderr))
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ShardError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # a full disk or an output folder gone read-only mid-way
        print(f"error: {e.filename or args.out}: {e.strerror or e}", file=sys.stderr)
        return 1
    written = sum(v["written"] for v in rep["splits"].values())
    print(f"{rep['target']}: {written} samples in {len(rep['splits'])} splits"
          + (f", {len(rep['skipped'])} left out (see export.json)" if rep["skipped"] else ""), file=sys.stderr)
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
