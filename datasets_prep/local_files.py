"""One check for every local file a user hands over: what kind of file it is, where its links lead,
and how many bytes it may hold, decided before a byte is read.

Why: a FIFO named `b.png` blocks `open()` forever, `/dev/zero` renamed `z.png` reads until memory
runs out, a `caption.txt` linked to `/etc/passwd` pulls a file from outside the dataset into the
shards and their quarantine lines. So, for folder inputs and `train.predict` alike:
- only regular files are read (a followed link counts by its target); anything else is refused with
  its type, and the file is opened non-blocking so a FIFO swapped in after the check cannot hang us;
- a link is followed when its target stays inside the input's root, refused when it leaves it;
- a file over the byte cap is refused from its size, and never read past the cap if it grows.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from tokenizer.files import NotRegularFile, open_regular

MAX_BYTES = 32 * 1024 * 1024
"""Largest file read (bytes); real MathWriting/CROHME files are under 1 MB."""

__all__ = ["FileRefused", "MAX_BYTES", "file_kind", "inside", "read_capped", "check_regular", "walk_files",
           "excerpt"]


class FileRefused(ValueError):
    """A local file that is not read; str() is the reason (the caller names the file), `kind` a short class."""

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind


def file_kind(mode: int) -> str:
    """What a stat mode is, in words ("a FIFO", "a character device", ...)."""
    for test, what in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return what
    return "not a regular file"


def inside(target: str, root: str) -> bool:
    """Whether the resolved `target` is `root` or lies below it (both real paths)."""
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


def check_regular(path: str | os.PathLike, root: str | os.PathLike | None = None) -> os.stat_result:
    """The stat of the file `path` names, after the checks: a link must stay inside `root` (when
    given) and lead to a regular file; anything but a regular file is FileRefused."""
    path = os.fspath(path)
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            real = os.path.realpath(path)
            if root is not None and not inside(real, os.path.realpath(root)):
                raise FileRefused("symbolic link leaves the input folder: not followed", "link-outside")
            st = os.stat(path)
    except FileNotFoundError:
        raise FileRefused("no such file (or a link to nothing)", "unreadable") from None
    except OSError as e:
        raise FileRefused(f"cannot read: {e.strerror or e}", "unreadable") from None
    if not stat.S_ISREG(st.st_mode):
        raise FileRefused(f"{file_kind(st.st_mode)}, not a regular file: not read", "not-a-file")
    return st


def read_capped(path: str | os.PathLike, max_bytes: int = MAX_BYTES, root: str | os.PathLike | None = None) -> bytes:
    """The bytes of a regular file of at most `max_bytes`; FileRefused (with the reason) otherwise."""
    st = check_regular(path, root)
    if st.st_size > max_bytes:
        raise FileRefused(f"file is {st.st_size} bytes, over the limit of {max_bytes}", "too-large")
    try:
        f = open_regular(path)
    except NotRegularFile as e:  # swapped between the check and the open
        raise FileRefused(f"{file_kind(e.mode)}, not a regular file: not read", "not-a-file") from None
    except OSError as e:
        raise FileRefused(f"cannot read: {e.strerror or e}", "unreadable") from None
    with f:
        try:
            data = f.read(max_bytes + 1)
        except OSError as e:
            raise FileRefused(f"cannot read: {e.strerror or e}", "unreadable") from None
    if len(data) > max_bytes:
        raise FileRefused(f"file grew past the limit of {max_bytes} bytes while read", "too-large")
    return data


def walk_files(root: str | os.PathLike) -> Iterator[tuple[str, str, FileRefused | None]]:
    """(relative POSIX name, full path, refusal or None) for every file under `root`, sorted by name.

    The link policy for folder inputs: a link whose target stays inside `root` is followed, a link
    that leaves `root` is refused; a linked folder that is already on the way down (a loop) is
    refused. Entries that are not regular files (FIFOs, devices, sockets) come with their refusal, so
    the caller decides which names matter and says why each was not read."""
    root = os.fspath(root)
    real_root = os.path.realpath(root)
    found: list[tuple[str, str, FileRefused | None]] = []
    stack: list[tuple[str, str, frozenset]] = [("", root, frozenset([real_root]))]
    while stack:
        prefix, folder, chain = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as e:
            found.append((prefix.rstrip("/") or ".", folder,
                          FileRefused(f"cannot list: {e.strerror or e}", "unreadable")))
            continue
        for e in entries:
            name = prefix + e.name
            try:
                st = os.lstat(e.path)
                if stat.S_ISLNK(st.st_mode):
                    real = os.path.realpath(e.path)
                    if not inside(real, real_root):
                        raise FileRefused("symbolic link leaves the input folder: not followed", "link-outside")
                    try:
                        st = os.stat(e.path)
                    except OSError:
                        raise FileRefused("symbolic link to nothing", "unreadable") from None
                    if stat.S_ISDIR(st.st_mode) and real in chain:
                        raise FileRefused("symbolic link back to a folder it lies in (a loop): not followed",
                                          "link-loop")
                else:
                    real = None
                if stat.S_ISDIR(st.st_mode):
                    real = real or os.path.realpath(e.path)
                    stack.append((name + "/", e.path, chain | {real}))
                    continue
                if not stat.S_ISREG(st.st_mode):
                    raise FileRefused(f"{file_kind(st.st_mode)}, not a regular file: not read", "not-a-file")
            except FileRefused as bad:
                found.append((name, e.path, bad))
                continue
            except OSError as err:
                found.append((name, e.path, FileRefused(f"cannot read: {err.strerror or err}", "unreadable")))
                continue
            found.append((name, e.path, None))
    found.sort(key=lambda f: f[0])
    return iter(found)


def excerpt(text: str | bytes, limit: int = 40) -> str:
    """A short, escaped piece of a file's content for a message: quarantine lines say what was wrong
    with a line without copying the file into the report."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    cut = text[:limit]
    return ascii(cut)[1:-1] + ("..." if len(text) > limit else "")
