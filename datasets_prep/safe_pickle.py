"""A pickle reader that builds only what image pickles hold: dicts, lists, strings and numpy arrays.

TAMER/ICAL ship their images as `images.pkl` (a dict: name -> uint8 array). `pickle.load` on a file
from the internet runs whatever the file says (`os.system` is one opcode away), so it is never used
here. `load_images` accepts only the handful of globals that rebuilding a numpy array needs and
refuses every other one by name, before anything is called; the file size is checked first. An array
is built only from bytes the file carries: numpy's `_reconstruct` allocates nothing here (a 191-byte
pickle could otherwise ask for a 320 MB sub-array dtype, or hand out uninitialized memory when no state
follows), its state must hold exactly shape x itemsize bytes of a plain number dtype, and all arrays of
one file together may take at most BUDGET_FACTOR times its size.
"""
from __future__ import annotations

import collections
import io
import pickle
from pathlib import Path

import numpy as np

MAX_PICKLE_BYTES = 8 << 30
"""Bigger files are refused: HME100K's training images pickle to ~5 GB as uint8 arrays."""

BUDGET_FACTOR = 4
"""Array bytes one pickle may build: this many times its own size (plus BUDGET_SLACK). Every array's
bytes come from the file, but a memo reference repeats them for a few opcode bytes each."""
BUDGET_SLACK = 1 << 20
_DTYPE_KINDS = "biuf"  # the element types an image array has; no objects, records or sub-arrays


class _ArrayType:
    """Stands for numpy.ndarray inside the pickle: usable as `_reconstruct`'s subtype argument only;
    calling it (an uninitialized array of any size) is refused."""

    def __init__(self, *args, **kwargs):
        raise PickleRefused("refused: the pickle calls numpy.ndarray directly (image pickles never do)")


class _Budget:
    """The array bytes one load may still build (see BUDGET_FACTOR)."""

    def __init__(self, file_bytes: int):
        self.left = BUDGET_FACTOR * file_bytes + BUDGET_SLACK

    def take(self, nbytes: int) -> None:
        self.left -= nbytes
        if self.left < 0:
            raise PickleRefused("refused: the pickle builds more array bytes than a small multiple of its own "
                                "size (a repeated reference to the same data)")


def _plain_dtype(dtype) -> np.dtype:
    """A dtype an image array can have: a number or bool, no sub-array, fields or objects (a
    sub-array dtype makes a one-element array of any size)."""
    if not isinstance(dtype, np.dtype):
        raise PickleRefused(f"refused: an array dtype that is a {type(dtype).__name__}")
    if dtype.kind not in _DTYPE_KINDS or dtype.subdtype is not None or dtype.fields is not None \
            or dtype.hasobject or dtype.itemsize > 16:
        raise PickleRefused(f"refused: array dtype {dtype!s} (image arrays hold plain numbers)")
    # numpy's own canonical dtype, never the pickle's object: a later BUILD on that object (numpy
    # dtypes take state in place) cannot reach an array built from the checked one
    return np.dtype(dtype.str)


def _shape(shape) -> tuple[int, ...]:
    if not isinstance(shape, tuple) or len(shape) > 4 or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d for d in shape):
        raise PickleRefused("refused: an array shape that is not a short tuple of sizes")
    return shape


class _PendingArray:
    """What numpy's `_reconstruct` stands for: nothing is allocated until the state arrives, and the
    array is then built from the bytes the state carries, of exactly the size its shape and dtype say.
    One left without a state (no data in the file) is refused when the images are collected."""

    def __init__(self, budget: _Budget):
        self._budget = budget
        self.array: np.ndarray | None = None

    def __setstate__(self, state) -> None:
        if self.array is not None or not isinstance(state, tuple) or len(state) != 5:
            raise PickleRefused("refused: an array state numpy itself would not write")
        _version, shape, dtype, fortran, raw = state
        shape, dtype = _shape(shape), _plain_dtype(dtype)
        if not isinstance(raw, (bytes, bytearray)) or not isinstance(fortran, (bool, int)):
            raise PickleRefused("refused: an array whose data is not bytes carried by the file")
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if count * dtype.itemsize != len(raw):
            raise PickleRefused(f"refused: an array of shape {shape} {dtype!s} with {len(raw)} data bytes")
        self._budget.take(len(raw))
        self.array = np.frombuffer(raw, dtype).reshape(shape, order="F" if fortran else "C").copy()


def _finished(value):
    """An array built from its state; a reconstruction that never got its data is refused."""
    if isinstance(value, _PendingArray):
        if value.array is None:
            raise PickleRefused("refused: an array with no data in the file (numpy would hand out "
                                "uninitialized memory)")
        return value.array
    return value


def _latin1(text, encoding="latin1"):
    """Protocol 2 spells bytes as `_codecs.encode(str, "latin1")`: that call, and no other codec."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise PickleRefused("refused: a codec call other than the latin-1 bytes of protocol 2")
    return text.encode("latin1")


def _dtype(spec, align=False, copy=False):
    """numpy.dtype as numpy's pickles call it (`dtype("u1", False, True)`), for plain numbers only."""
    if not isinstance(spec, str) or len(spec) > 8:
        raise PickleRefused("refused: a dtype spelled other than by a short type string")
    try:  # always a copy: numpy's pickle sets the state of the dtype it gets, never of a shared one
        return _plain_dtype(np.dtype(spec, False, True))
    except TypeError:
        raise PickleRefused(f"refused: dtype {spec!r}") from None


class PickleRefused(ValueError):
    """The pickle asks for something an image pickle has no need of; the message says what."""


class _Restricted(pickle.Unpickler):
    def __init__(self, file, size: int):
        super().__init__(file)
        self._budget = _Budget(size)
        self._allowed = {
            ("_codecs", "encode"): _latin1,
            ("numpy", "ndarray"): _ArrayType, ("numpy", "dtype"): _dtype,
            ("collections", "OrderedDict"): collections.OrderedDict,
        }
        for mod in ("numpy.core", "numpy._core"):
            self._allowed[(f"{mod}.multiarray", "_reconstruct")] = self._reconstruct
            self._allowed[(f"{mod}.numeric", "_frombuffer")] = self._frombuffer

    def _reconstruct(self, subtype, shape, dtype):
        """numpy's pickle entry point, held to what numpy itself writes: a placeholder whose shape,
        dtype and bytes all come from the state that follows (nothing is allocated here)."""
        if subtype is not _ArrayType or not isinstance(shape, tuple):
            raise PickleRefused("refused: an array reconstruction numpy itself would not write")
        return _PendingArray(self._budget)

    def _frombuffer(self, buf, dtype, shape, order):
        """numpy's protocol-5 entry point: the array is a copy of bytes the file carries."""
        if not isinstance(buf, (bytes, bytearray)):
            raise PickleRefused("refused: an array buffer that is not bytes carried by the file")
        dtype, shape = _plain_dtype(dtype), _shape(shape)
        if order not in ("C", "F"):
            raise PickleRefused("refused: an array order other than C or F")
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if count * dtype.itemsize != len(buf):
            raise PickleRefused(f"refused: an array of shape {shape} {dtype!s} with {len(buf)} data bytes")
        self._budget.take(len(buf))
        return np.frombuffer(buf, dtype).reshape(shape, order=order).copy()

    def find_class(self, module: str, name: str):
        got = self._allowed.get((module, name))
        if got is None:
            raise PickleRefused(f"refused: the pickle wants {module}.{name}, which an image pickle never "
                                "needs (only dicts/lists of numpy arrays are read)")
        return got

    def persistent_load(self, pid):
        raise PickleRefused("refused: the pickle uses persistent ids")


def loads(data: bytes):
    """Unpickle `data` allowing only numpy arrays and plain containers; PickleRefused otherwise.
    Arrays are built only from bytes present in `data`, at most BUDGET_FACTOR times its size in all."""
    try:
        obj = _Restricted(io.BytesIO(data), len(data)).load()
    except PickleRefused:
        raise
    except RecursionError:
        raise PickleRefused("not a readable pickle: nested too deeply") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError,
            KeyError, MemoryError, OverflowError, ImportError) as e:
        raise PickleRefused(f"not a readable pickle: {type(e).__name__}: {e}") from None
    if isinstance(obj, _PendingArray):
        return _finished(obj)
    if isinstance(obj, dict):
        return type(obj)((k, _finished(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return [tuple(_finished(x) for x in p) if isinstance(p, (list, tuple)) else _finished(p) for p in obj]
    return obj


def load_images(path: str | Path, max_bytes: int = MAX_PICKLE_BYTES) -> dict[str, np.ndarray]:
    """`images.pkl` -> {name: array}; PickleRefused (naming the cause) for anything else."""
    from .local_files import FileRefused, read_capped
    try:
        data = read_capped(path, max_bytes)
    except FileRefused as e:
        raise PickleRefused(str(e)) from None
    return images_from(loads(data))


def images_from(obj) -> dict[str, np.ndarray]:
    """Check the unpickled object is name -> image array (a dict, or a list of (name, array) pairs)."""
    if isinstance(obj, (list, tuple)) and all(isinstance(x, (list, tuple)) and len(x) == 2 for x in obj):
        obj = dict(obj)
    if not isinstance(obj, dict):
        raise PickleRefused(f"holds a {type(obj).__name__}, not a dict of name -> image array")
    out: dict[str, np.ndarray] = {}
    for k, v in obj.items():
        if not isinstance(k, str):
            raise PickleRefused(f"a key is a {type(k).__name__}, not an image name")
        out[k] = v  # each value is checked when its image is loaded (a bad one is quarantined alone)
    return out
