"""One way to write a file so that a kill never leaves half of it: write a temporary file beside it,
then `os.replace` it over the target (atomic on POSIX and Windows).

It lives in tokenizer/ because that is the package every other one (datasets_prep, model, train)
already imports; vocabularies, shards, JSON reports, exports and checkpoints all go through it.
"""
from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, clean: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside `path` to write to; on success it replaces `path`, on any
    error it is removed and `path` is untouched. `clean` first removes stray temporaries of killed
    writers of the same file (any pid): a glob of the folder, so not for writers of many files."""
    path = Path(path)
    if clean:
        for stray in path.parent.glob(f".{path.name}.tmp-*"):
            with contextlib.suppress(OSError):
                stray.unlink()
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def atomic_write(path: str | os.PathLike, data: bytes | str, clean: bool = False) -> None:
    """Write bytes (or UTF-8 text, `\\n` line ends) to `path` atomically."""
    with atomic_path(path, clean) as tmp:
        if isinstance(data, str):
            tmp.write_text(data, encoding="utf-8", newline="\n")
        else:
            tmp.write_bytes(data)


def atomic_write_json(path: str | os.PathLike, obj, indent: int = 2) -> None:
    atomic_write(path, json.dumps(obj, indent=indent, ensure_ascii=False) + "\n")


class NotRegularFile(OSError):
    """A FIFO, device, socket or folder where a file of text was expected."""


def open_regular(path: str | os.PathLike):
    """A regular file opened for reading in binary. Why not plain `open`: a FIFO there would block
    forever and `/dev/zero` would never end; both are refused (NotRegularFile, an OSError whose strerror
    says what the path is) without blocking, and a file swapped for one after the check is caught."""
    import stat

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                 | getattr(os, "O_CLOEXEC", 0))
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a folder" if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a file")
        err = NotRegularFile(f"{kind}, not a regular file")
        err.strerror, err.filename, err.mode = f"{kind}, not a regular file", os.fspath(path), mode
        raise err
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")
