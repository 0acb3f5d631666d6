"""The glyph bank on disk: the `Bank` arrays and their checks (the command is bank.py).

Each sample is one symbol as a writer drew it, cut from a segmented InkML file (CROHME's symbol
traceGroups; MathWriting's symbols.jsonl), keyed by the tokenizer's token, with the writer and the
file it came from. Strokes are normalized to the symbol's box: the box's top-left corner at 0 and
its longer side 1 (aspect kept), y down; the synthesizer scales each sample into the layout's box.

On disk, a folder:
  glyphs.npz     numeric arrays only (loaded with allow_pickle=False): `points` (P, 2) float16,
                 `stroke_starts` (S+1) and `sample_strokes` (G+1) int64 offsets, `sample_symbol`,
                 `sample_writer`, `sample_file` (G) int32, `sample_size` (G, 2) float32 (the
                 normalized box), `sample_height` (G) float32 (height / the ink's median symbol height)
  index.json     names for those ids (`symbols`, `writers`, `files`) and how it was built
  coverage.json  symbols, samples per symbol, writers per symbol, what was skipped and why
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

FORMAT = "gryphone-glyph-bank"
VERSION = 1
ARRAYS = {"points": (np.float16, 2), "stroke_starts": (np.int64, 1), "sample_strokes": (np.int64, 1),
          "sample_symbol": (np.int32, 1), "sample_writer": (np.int32, 1), "sample_file": (np.int32, 1),
          "sample_size": (np.float32, 2), "sample_height": (np.float32, 1)}


class BankError(ValueError):
    """A bank folder that cannot be used, naming the file and the cause."""


@dataclass
class Bank:
    """Real symbols by token; see the module docstring for the arrays."""

    symbols: list[str]
    writers: list[str]
    files: list[str]
    arrays: dict[str, np.ndarray]
    meta: dict = field(default_factory=dict)

    @property
    def num_samples(self) -> int:
        return len(self.arrays["sample_symbol"])

    def sample_strokes(self, g: int) -> list[np.ndarray]:
        """Sample g's strokes as float64 (n, 2) arrays in its normalized box."""
        a = self.arrays
        s0, s1 = int(a["sample_strokes"][g]), int(a["sample_strokes"][g + 1])
        starts = a["stroke_starts"]
        return [a["points"][starts[s]:starts[s + 1]].astype(np.float64) for s in range(s0, s1)]

    def by_symbol(self) -> dict[str, np.ndarray]:
        """token -> indices of its samples."""
        sym = self.arrays["sample_symbol"]
        order = np.argsort(sym, kind="stable")
        bounds = np.searchsorted(sym[order], np.arange(len(self.symbols) + 1))
        return {s: order[bounds[i]:bounds[i + 1]] for i, s in enumerate(self.symbols) if bounds[i + 1] > bounds[i]}

    def coverage(self) -> dict:
        """Symbols, samples and writers, overall and per symbol (most samples first)."""
        a = self.arrays
        per = {}
        for s, idx in sorted(self.by_symbol().items(), key=lambda kv: (-len(kv[1]), kv[0])):
            per[s] = {"samples": int(len(idx)), "writers": int(len(np.unique(a["sample_writer"][idx])))}
        return {"symbols": len(per), "samples": self.num_samples,
                "writers": int(len(np.unique(a["sample_writer"]))), "per_symbol": per}

    # ---- disk ----------------------------------------------------------------------------------
    def save(self, folder: Path) -> None:
        from tokenizer.files import atomic_write

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / "glyphs.tmp.npz"
        np.savez(tmp, **{k: np.ascontiguousarray(self.arrays[k], dtype=ARRAYS[k][0]) for k in ARRAYS})
        tmp.replace(folder / "glyphs.npz")
        index = {"format": FORMAT, "version": VERSION, "symbols": self.symbols, "writers": self.writers,
                 "files": self.files, **self.meta}
        atomic_write(folder / "index.json", json.dumps(index, ensure_ascii=False, indent=0) + "\n")

    @classmethod
    def load(cls, folder: Path) -> "Bank":
        """Read and check a bank folder (numeric arrays only: no pickle is ever loaded)."""
        folder = Path(folder)
        ipath, gpath = folder / "index.json", folder / "glyphs.npz"
        try:
            index = json.loads(ipath.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise BankError(f"{ipath}: not found (is {folder} a glyph bank? build one with "
                            "python -m datasets_prep.synth.bank)") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise BankError(f"{ipath}: unreadable ({e})") from None
        if not isinstance(index, dict) or index.get("format") != FORMAT:
            raise BankError(f"{ipath}: not a {FORMAT} index")
        if index.get("version") != VERSION:
            raise BankError(f"{ipath}: version {index.get('version')!r}, this code reads {VERSION}")
        names = {}
        for key in ("symbols", "writers", "files"):
            v = index.get(key)
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise BankError(f"{ipath}: {key!r} must be a list of strings")
            names[key] = v
        try:
            with np.load(gpath, allow_pickle=False) as z:
                arrays = {k: z[k] for k in ARRAYS}
        except FileNotFoundError:
            raise BankError(f"{gpath}: not found") from None
        except KeyError as e:
            raise BankError(f"{gpath}: array {e} missing") from None
        except (OSError, ValueError) as e:  # a pickled object array is a ValueError with allow_pickle=False
            raise BankError(f"{gpath}: unreadable ({e})") from None
        _check(arrays, names, gpath)
        meta = {k: v for k, v in index.items() if k not in ("format", "version", "symbols", "writers", "files")}
        return cls(names["symbols"], names["writers"], names["files"], arrays, meta)


def _check(a: dict[str, np.ndarray], names: dict, where: Path) -> None:
    """Shapes, dtypes and offsets consistent, every id in range: a damaged bank fails here, not later."""
    for k, (dtype, ndim) in ARRAYS.items():
        if a[k].dtype != dtype or a[k].ndim != ndim or (ndim == 2 and a[k].shape[1] != 2):
            raise BankError(f"{where}: array {k!r} has dtype {a[k].dtype} shape {a[k].shape}")
    g = len(a["sample_symbol"])
    for k in ("sample_writer", "sample_file", "sample_size", "sample_height"):
        if len(a[k]) != g:
            raise BankError(f"{where}: {k} has {len(a[k])} rows for {g} samples")
    ss, st = a["sample_strokes"], a["stroke_starts"]
    if len(ss) != g + 1 or ss[0] != 0 or np.any(np.diff(ss) < 1) or ss[-1] != len(st) - 1:
        raise BankError(f"{where}: sample_strokes offsets are inconsistent")
    if st[0] != 0 or np.any(np.diff(st) < 1) or st[-1] != len(a["points"]):
        raise BankError(f"{where}: stroke_starts offsets are inconsistent")
    for k, key in (("sample_symbol", "symbols"), ("sample_writer", "writers"), ("sample_file", "files")):
        if g and (a[k].min() < 0 or a[k].max() >= len(names[key])):
            raise BankError(f"{where}: {k} has an id outside index.json's {key}")
    if not np.isfinite(a["points"]).all():
        raise BankError(f"{where}: points hold NaN or inf")


