"""A pickle reader that builds only what image pickles hold: dicts, lists, strings and numpy arrays.

TAMER/ICAL ship their images as `images.pkl` (a dict: name -> uint8 array). `pickle.load` on a file
from the internet runs whatever the file says (`os.system` is one opcode away), so it is never used
here. `load_images` accepts only the handful of globals that rebuilding a numpy array needs and
refuses every other one by name, before anything is called; the file size is checked first, and an
array's shape must match the bytes it carries (numpy checks this when the state is set), so memory is
bounded by a small multiple of the file's size (a memo reference repeated costs a pointer per opcode
byte or two); lower `max_bytes` where that matters.
"""
from __future__ import annotations

import io
import pickle
from pathlib import Path

import numpy as np

MAX_PICKLE_BYTES = 8 << 30
"""Bigger files are refused: HME100K's training images pickle to ~5 GB as uint8 arrays."""

class _ArrayType:
    """Stands for numpy.ndarray inside the pickle: usable as `_reconstruct`'s subtype argument only;
    calling it (an uninitialized array of any size) is refused."""

    def __init__(self, *args, **kwargs):
        raise PickleRefused("refused: the pickle calls numpy.ndarray directly (image pickles never do)")


def _reconstruct(subtype, shape, dtype):
    """numpy's pickle entry point, held to what numpy itself writes: an empty placeholder array whose
    real shape and bytes come from its state (checked against each other by numpy)."""
    if subtype is not _ArrayType or not isinstance(shape, tuple) or int(np.prod(shape)) > 1:
        raise PickleRefused("refused: an array reconstruction numpy itself would not write")
    return _NUMPY_RECONSTRUCT(np.ndarray, shape, dtype)


_NUMPY_RECONSTRUCT = (getattr(np, "_core", None) or np.core).multiarray._reconstruct


def _frombuffer(buf, dtype, shape, order):
    """numpy's protocol-5 entry point: the array views bytes the file carries (sizes checked by numpy)."""
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise PickleRefused("refused: an array buffer that is not bytes")
    return np.frombuffer(buf, dtype).reshape(shape, order=order).copy()


def _latin1(text, encoding="latin1"):
    """Protocol 2 spells bytes as `_codecs.encode(str, "latin1")`: that call, and no other codec."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise PickleRefused("refused: a codec call other than the latin-1 bytes of protocol 2")
    return text.encode("latin1")


_ALLOWED = {
    ("_codecs", "encode"): _latin1,
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct, ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy", "ndarray"): _ArrayType, ("numpy", "dtype"): np.dtype,
    ("numpy.core.numeric", "_frombuffer"): _frombuffer, ("numpy._core.numeric", "_frombuffer"): _frombuffer,
    ("collections", "OrderedDict"): __import__("collections").OrderedDict,
}


class PickleRefused(ValueError):
    """The pickle asks for something an image pickle has no need of; the message says what."""


class _Restricted(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        got = _ALLOWED.get((module, name))
        if got is None:
            raise PickleRefused(f"refused: the pickle wants {module}.{name}, which an image pickle never "
                                "needs (only dicts/lists of numpy arrays are read)")
        return got

    def persistent_load(self, pid):
        raise PickleRefused("refused: the pickle uses persistent ids")


def loads(data: bytes):
    """Unpickle `data` allowing only numpy arrays and plain containers; PickleRefused otherwise."""
    try:
        return _Restricted(io.BytesIO(data)).load()
    except PickleRefused:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError,
            KeyError, MemoryError, OverflowError, ImportError) as e:
        raise PickleRefused(f"not a readable pickle: {type(e).__name__}: {e}") from None


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
