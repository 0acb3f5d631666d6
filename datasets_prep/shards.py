"""The shard layout: Arrow IPC *stream* files that `datasets.load_from_disk` and pyarrow both open.

Per split folder: `data-NNNNN[-PP].arrow` (IPC stream, Hugging Face features in the schema metadata
under `huggingface`), `dataset_info.json` (features, and row counts per shard under `splits`) and
`state.json` (the file list); `dataset_dict.json` at the top lists the splits. That is exactly what
`Dataset.save_to_disk` writes, so `load_from_disk(out)` gives a DatasetDict and
`load_from_disk(out/split)` one Dataset, memory-mapped, without copying. The trainer does not need
`datasets` at all: `load_split` memory-maps the same files with pyarrow and checks them.

Columns (see `FEATURE_TYPES`): image (HF Image: struct{bytes, path}; grayscale PNG, black on white),
latex (training target), latex_raw (label as in the file), label_error (tokenizer verdict, null =
valid), sample_id, source (the --src), split, path (inside the input folder/archive), num_strokes,
num_points (null for image rows), bbox [x0, y0, x1, y1] (ink units; source pixels for image rows),
scale and offset [ox, oy] (pixel = ink * scale + offset), annotations (JSON of every annotation in
the file: writer, UI, ...; image rows: their name and where their label came from), and with
--keep-ink, strokes: list (strokes) of list (points) of [x, y] or [x, y, t] in ink units, as in the
file.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa

from tokenizer.files import atomic_path, atomic_write_json

HF_METADATA_KEY = b"huggingface"
STATE_FILE = "state.json"
INFO_FILE = "dataset_info.json"
DICT_FILE = "dataset_dict.json"
MAX_SHARD_BYTES = 500 * 1024 * 1024  # Hugging Face's default shard cap

# name -> (HF feature spec as in dataset_info.json, arrow type)
_F64 = {"dtype": "float64", "_type": "Value"}
FEATURE_TYPES: dict[str, tuple[dict, pa.DataType]] = {
    "image": ({"_type": "Image"}, pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
    "latex": ({"dtype": "string", "_type": "Value"}, pa.string()),
    "latex_raw": ({"dtype": "string", "_type": "Value"}, pa.string()),
    "label_error": ({"dtype": "string", "_type": "Value"}, pa.string()),
    "sample_id": ({"dtype": "string", "_type": "Value"}, pa.string()),
    "source": ({"dtype": "string", "_type": "Value"}, pa.string()),
    "split": ({"dtype": "string", "_type": "Value"}, pa.string()),
    "path": ({"dtype": "string", "_type": "Value"}, pa.string()),
    "num_strokes": ({"dtype": "int32", "_type": "Value"}, pa.int32()),
    "num_points": ({"dtype": "int32", "_type": "Value"}, pa.int32()),
    "bbox": ({"feature": _F64, "_type": "List"}, pa.list_(pa.float64())),
    "scale": (_F64, pa.float64()),
    "offset": ({"feature": _F64, "_type": "List"}, pa.list_(pa.float64())),
    "annotations": ({"dtype": "string", "_type": "Value"}, pa.string()),
}
STROKES_FEATURE = ({"feature": {"feature": {"feature": _F64, "_type": "List"}, "_type": "List"}, "_type": "List"},
                   pa.list_(pa.list_(pa.list_(pa.float64()))))


class ShardError(Exception):
    """A shard folder or file that cannot be read back; str() names the file and the cause."""

    def __init__(self, path: str | os.PathLike, message: str):
        super().__init__(str(path), message)
        self.path = str(path)
        self.message = message

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def _hf_features(keep_ink: bool) -> dict:
    feats = {name: spec for name, (spec, _) in FEATURE_TYPES.items()}
    if keep_ink:
        feats["strokes"] = STROKES_FEATURE[0]
    return _legacy_sequences(feats) if _datasets_lacks_list() else feats


@functools.lru_cache(maxsize=1)
def _datasets_lacks_list() -> bool:
    """datasets < 4 knows `Sequence`, not `List`; write what the installed version reads. Read
    from the package metadata: importing `datasets` costs ~2 s per worker."""
    try:
        from importlib.metadata import PackageNotFoundError, version
        return int(version("datasets").split(".")[0]) < 4
    except (PackageNotFoundError, ValueError):
        return False


def _legacy_sequences(obj):
    if isinstance(obj, dict):
        out = {k: _legacy_sequences(v) for k, v in obj.items()}
        if out.get("_type") == "List":
            out["_type"] = "Sequence"
        return out
    return obj


@functools.lru_cache(maxsize=2)
def schema(keep_ink: bool = False) -> pa.Schema:
    """Arrow schema of a shard, with the HF features in its metadata."""
    fields = [pa.field(name, typ) for name, (_, typ) in FEATURE_TYPES.items()]
    if keep_ink:
        fields.append(pa.field("strokes", STROKES_FEATURE[1]))
    meta = json.dumps({"info": {"features": _hf_features(keep_ink)}})
    return pa.schema(fields, metadata={HF_METADATA_KEY: meta.encode()})


def strokes_array(rows: list[list[np.ndarray]]) -> pa.Array:
    """list<list<list<double>>> from per-row stroke arrays, built from offsets in one go."""
    flat = [s for strokes in rows for s in strokes]
    lengths = np.array([len(s) for s in flat], dtype=np.int64)
    widths = np.repeat(np.array([s.shape[1] for s in flat], dtype=np.int64), lengths)
    values = np.concatenate([s.reshape(-1) for s in flat]) if flat else np.zeros(0)

    def offsets(counts: np.ndarray) -> pa.Array:
        return pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32), pa.int32())

    points = pa.ListArray.from_arrays(offsets(widths), pa.array(values, pa.float64()))
    strokes = pa.ListArray.from_arrays(offsets(lengths), points)
    return pa.ListArray.from_arrays(offsets(np.array([len(r) for r in rows], dtype=np.int64)), strokes)


def write_table(table: pa.Table, path: Path) -> int:
    """Write one IPC stream file atomically (temp file, then os.replace); returns its size."""
    with atomic_path(path) as tmp:
        with pa.OSFile(str(tmp), "wb") as sink:
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
    return path.stat().st_size


def split_by_bytes(table: pa.Table, max_bytes: int) -> list[pa.Table]:
    """Cut a table into consecutive row ranges of at most ~max_bytes each (at least one row each)."""
    total = table.nbytes
    if total <= max_bytes or table.num_rows <= 1:
        return [table]
    parts = int(np.ceil(total / max_bytes))
    step = int(np.ceil(table.num_rows / parts))
    return [table.slice(i, step) for i in range(0, table.num_rows, step)]


def write_split_metadata(split_dir: Path, split: str, files: list[str], shard_lengths: list[int],
                         num_bytes: int, keep_ink: bool) -> None:
    """dataset_info.json + state.json, as `Dataset.save_to_disk` writes them."""
    info = {
        "citation": "", "description": "gryphone InkML -> raster shards (datasets_prep.inkml)",
        "features": _hf_features(keep_ink), "homepage": "", "license": "",
        "splits": {split: {"name": split, "num_bytes": int(num_bytes), "num_examples": int(sum(shard_lengths)),
                           "shard_lengths": [int(n) for n in shard_lengths], "dataset_name": None}},
    }
    digest = hashlib.sha256(json.dumps([split, files, shard_lengths]).encode()).hexdigest()[:16]
    state = {"_data_files": [{"filename": f} for f in files], "_fingerprint": digest, "_format_columns": None,
             "_format_kwargs": {}, "_format_type": None, "_output_all_columns": False, "_split": split}
    write_json(split_dir / INFO_FILE, info)
    write_json(split_dir / STATE_FILE, state)


def write_split(root: Path, name: str, table: pa.Table) -> None:
    """`table` as split `name` of the shard folder `root` (its shard files, dataset_info.json and
    state.json; shard files of an earlier split of that name are replaced). dataset_dict.json is the
    caller's to write."""
    split_dir = root / name
    split_dir.mkdir(parents=True, exist_ok=True)
    for old in split_dir.glob("data-*.arrow"):
        old.unlink()
    parts = split_by_bytes(table, MAX_SHARD_BYTES)
    files, lengths, nbytes = [], [], 0
    for i, part in enumerate(parts):
        fname = f"data-{i:05d}-of-{len(parts):05d}.arrow"
        nbytes += write_table(part.replace_schema_metadata(table.schema.metadata), split_dir / fname)
        files.append(fname)
        lengths.append(part.num_rows)
    keep_ink = "strokes" in table.column_names
    write_split_metadata(split_dir, name, files, lengths, nbytes, keep_ink)


def write_json(path: Path, obj) -> None:
    atomic_write_json(path, obj)


def write_dataset_dict(out: Path, splits: list[str]) -> None:
    write_json(out / DICT_FILE, {"splits": list(splits)})


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ShardError(path, "missing (not a shard split folder?)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ShardError(path, f"unreadable: {e}") from None


def read_shard(path: Path) -> pa.Table:
    """One IPC stream file, memory-mapped; ShardError on a corrupt or truncated file."""
    try:
        source = pa.memory_map(str(path), "r")
        return pa.ipc.open_stream(source).read_all()
    except FileNotFoundError:
        raise ShardError(path, "shard file missing") from None
    except (pa.ArrowInvalid, pa.ArrowIOError, OSError, EOFError) as e:
        raise ShardError(path, f"corrupt or truncated Arrow stream ({e})") from None


def load_split(split_dir: str | os.PathLike) -> pa.Table:
    """All shards of one split, memory-mapped and concatenated (zero-copy), checked against the
    file list and row counts the writer recorded. Raises ShardError naming the bad file."""
    split_dir = Path(split_dir)
    state = _read_json(split_dir / STATE_FILE)
    try:
        files = [d["filename"] for d in state["_data_files"]]
    except (KeyError, TypeError):
        raise ShardError(split_dir / STATE_FILE, "no _data_files list") from None
    lengths = None
    info_path = split_dir / INFO_FILE
    if info_path.exists():
        splits = (_read_json(info_path).get("splits") or {})
        if len(splits) == 1:
            lengths = next(iter(splits.values())).get("shard_lengths")
    tables = []
    for i, name in enumerate(files):
        t = read_shard(split_dir / name)
        if tables and not t.schema.equals(tables[0].schema, check_metadata=False):
            raise ShardError(split_dir / name, "schema differs from the split's first shard")
        if lengths is not None and i < len(lengths) and t.num_rows != lengths[i]:
            raise ShardError(split_dir / name, f"{t.num_rows} rows, {lengths[i]} recorded: truncated or replaced")
        tables.append(t)
    if not tables:
        raise ShardError(split_dir, "split has no shard files")
    return pa.concat_tables(tables)


def load_splits(out: str | os.PathLike) -> dict[str, pa.Table]:
    """Every split listed in out/dataset_dict.json."""
    out = Path(out)
    return {s: load_split(out / s) for s in split_names(out)}


def split_names(out: str | os.PathLike) -> list[str]:
    """The splits out/dataset_dict.json lists, each a plain name (datasets_prep/names.py): a listed
    `../planted` is a ShardError, never a path to follow."""
    from .names import is_plain

    path = Path(out) / DICT_FILE
    got = _read_json(path)
    names = got.get("splits") if isinstance(got, dict) else None
    if not isinstance(names, list):
        raise ShardError(path, "no `splits` list")
    bad = [n for n in names if not is_plain(n)]
    if bad:
        raise ShardError(path, f"lists a split that is not a plain folder name: {ascii(bad[0])[:60]}")
    return names
