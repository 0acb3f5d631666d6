"""Read members of .tgz/.tar/.zip archives as a stream, without extracting, and refuse unsafe ones.

`mathwriting-2024.tgz` is 2.9 GB of 630k small files: extracting it costs more than converting it,
so members are read in archive order straight from the (gzip) stream. Nothing is ever written to
disk from an archive, but a member whose name escapes the archive root (absolute, `..`), a link,
a device, an encrypted or oversized member is still refused and reported: its name would end up
in the shards' `path` column and in any tool that later extracts by that name.
"""
from __future__ import annotations

import bz2
import contextlib
import io
import lzma
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .readers import InkError

ARCHIVE_SUFFIXES = (".tgz", ".tar.gz", ".tar", ".tar.bz2", ".tar.xz", ".zip")
INFLATE_RATIO = 200
INFLATE_FLOOR = 256 << 20
"""An archive may inflate to at most max(INFLATE_FLOOR, INFLATE_RATIO x its own size) in all. Real
datasets stay far below (InkML and PNG compress 1-20x); a bz2 stream of zeros inflates ~10^6x, so a
1 KB .tar.bz2 costs seconds of CPU and a 1 MB one hours. Past the budget the rest of the archive is
refused with one error (the members before it are kept), since a tar stream cannot reach a later
member without inflating the one before it."""


def inflate_budget(archive_bytes: int) -> int:
    return max(INFLATE_FLOOR, INFLATE_RATIO * archive_bytes)


def _past_budget(budget: int) -> str:
    return (f"inflates past {budget} bytes ({INFLATE_RATIO}x its size, at least {INFLATE_FLOOR >> 20} MB): "
            "a decompression bomb, or not a dataset archive")


class InflationBudgetError(OSError):
    """The archive inflates past inflate_budget (a decompression bomb, or not a dataset archive)."""


class _BudgetedStream(io.RawIOBase):
    """The decompressed tar stream, counted: raises InflationBudgetError past `budget` bytes."""

    def __init__(self, f, budget: int):
        self._f, self._budget, self.inflated = f, budget, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = self._f.readinto(b) or 0
        self.inflated += n
        if self.inflated > self._budget:
            raise InflationBudgetError(f"it {_past_budget(self._budget)}")
        return n

    def close(self) -> None:
        self._f.close()
        super().close()


def is_archive(path: Path) -> bool:
    name = path.name.lower()
    return path.is_file() and name.endswith(ARCHIVE_SUFFIXES)


def archive_stem(path: Path) -> str:
    name = path.name
    for suffix in sorted(ARCHIVE_SUFFIXES, key=len, reverse=True):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


@dataclass(frozen=True)
class Member:
    """A regular file inside an archive: its safe relative name and its bytes."""

    name: str
    data: bytes


def safe_name(raw: str, archive: str) -> str:
    """The member name as a clean relative POSIX path; InkError(stage="archive") if it would
    escape the archive root."""
    where = f"{archive}:{raw}"
    if "\x00" in raw:
        raise InkError(where, "archive", "member name contains a NUL byte", "unsafe-member")
    name = raw.replace("\\", "/")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if name.startswith("/") or (parts and len(parts[0]) > 1 and parts[0][1] == ":"):  # /x, C:x, C:/x
        raise InkError(where, "archive", "absolute member path escapes the archive root", "unsafe-member")
    if ".." in parts:
        raise InkError(where, "archive", "member path with '..' escapes the archive root", "unsafe-member")
    return "/".join(parts)


def _nested(where: str) -> InkError:
    """An archive inside an archive is not opened, and said so, as inside a folder input."""
    return InkError(where, "read", "an archive inside an archive input is not opened; extract it and pass it "
                                   "as an --input of its own", "nested-archive")


class _CountingReader(io.RawIOBase):
    """Wraps the compressed file to report how many bytes were consumed (for the progress bar)."""

    def __init__(self, f, on_read=None):
        self._f = f
        self._on_read = on_read
        self.consumed = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = self._f.readinto(b)
        self.consumed += n or 0
        if self._on_read and n:
            self._on_read(n)
        return n


def iter_members(path: Path, max_bytes: int, on_read=None, wanted=None) -> Iterator[Member | InkError]:
    """Regular-file members in archive order; unsafe or unreadable ones as InkError records. A
    broken archive (truncated gzip, not an archive) ends the iteration with one InkError naming it
    and the last good member: everything before it has been yielded.

    `wanted(name) -> bool`, when given, skips the other members without reading their bytes (a
    first pass that only needs the label files of an image archive)."""
    if path.name.lower().endswith(".zip"):
        yield from _iter_zip(path, max_bytes, wanted)
    else:
        yield from _iter_tar(path, max_bytes, on_read, wanted)


def _iter_tar(path: Path, max_bytes: int, on_read, wanted=None) -> Iterator[Member | InkError]:
    last = "(start)"
    try:
        with open(path, "rb") as raw:
            counted = io.BufferedReader(_CountingReader(raw, on_read), 1 << 20)
            inner = _decompressed(counted, path)
            stream = _BudgetedStream(inner, inflate_budget(path.stat().st_size))
            with inner, tarfile.open(fileobj=stream, mode="r|") as tf:
                for m in tf:
                    tf.members = []  # stream mode keeps every header read: ~350 B per member, 630k members
                    try:
                        name = safe_name(m.name, str(path))
                    except InkError as e:
                        yield e
                        continue
                    where = f"{path}:{name}"
                    if m.isdir() or (wanted is not None and not wanted(name)):
                        continue
                    if name.lower().endswith(ARCHIVE_SUFFIXES):
                        yield _nested(where)
                        continue
                    if m.issym() or m.islnk():
                        yield InkError(where, "archive", f"member is a link (to {m.linkname!r}), not a file",
                                       "unsafe-member")
                        continue
                    if not m.isreg():
                        yield InkError(where, "archive", "member is a device/fifo, not a regular file",
                                       "unsafe-member")
                        continue
                    if m.size > max_bytes:
                        yield InkError(where, "read", f"member is {m.size} bytes, over the limit of {max_bytes}",
                                       "too-large")
                        continue
                    f = tf.extractfile(m)
                    data = f.read() if f is not None else b""
                    last = name
                    yield Member(name, data)
            if getattr(inner, "truncated", False):
                raise EOFError("compressed stream ends before its end-of-stream marker (truncated file)")
    except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError) as e:
        yield InkError(str(path), "archive", f"archive unreadable after member {last!r}: {e}", "broken-archive")


class _GunzipStream(io.RawIOBase):
    """gzip (multi-member) decompression that hands out every byte recovered from a truncated file
    and then sets `truncated` (instead of raising mid-read, which would drop buffered bytes), so the
    members before the damage are still read and the damage is still reported.

    Bounded work per byte: each call inflates at most OUT_CHUNK bytes (a 64 KB chunk of zeros would
    otherwise inflate to 64 MB at once) and hands them out from an offset, never by re-slicing what is
    left (which made a 1 MB .tgz of 1 GB of zeros quadratic: minutes of CPU)."""

    OUT_CHUNK = 1 << 20

    def __init__(self, f):
        self._f = f
        self._z = zlib.decompressobj(wbits=31)
        self._buf = b""
        self._pos = 0
        self._done = False
        self.truncated = False

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while self._pos >= len(self._buf) and not self._done:
            self._fill()
        n = min(len(b), len(self._buf) - self._pos)
        b[:n] = self._buf[self._pos:self._pos + n]
        self._pos += n
        return n

    def _fill(self) -> None:
        z = self._z
        if z.eof and z.unused_data:  # the next gzip member
            rest = z.unused_data
            self._z = z = zlib.decompressobj(wbits=31)
            data = z.decompress(rest, self.OUT_CHUNK)
        elif z.unconsumed_tail:
            data = z.decompress(z.unconsumed_tail, self.OUT_CHUNK)
        else:
            chunk = self._f.read(1 << 16)
            if not chunk:
                self.truncated = not z.eof
                self._done = True
                return
            if z.eof:
                self._z = z = zlib.decompressobj(wbits=31)
            data = z.decompress(chunk, self.OUT_CHUNK)
        self._buf, self._pos = data, 0


def _decompressed(f, path: Path):
    """The tar byte stream. gzip/bz2/xz readers raise EOFError on a truncated file, which tarfile's
    own stream mode does not: a cut-off .tgz would otherwise look like a complete, shorter one."""
    name = path.name.lower()
    with open(path, "rb") as probe:
        magic = probe.read(6)
    if magic[:2] == b"\x1f\x8b":
        return _GunzipStream(f)
    if magic[:3] == b"BZh":
        return bz2.BZ2File(f, "rb")
    if magic == b"\xfd7zXZ\x00":
        return lzma.LZMAFile(f, "rb")
    if name.endswith((".tgz", ".gz", ".bz2", ".xz")):
        raise tarfile.ReadError(f"not a {name.rsplit('.', 1)[-1]} file (magic bytes {magic[:4]!r})")
    return contextlib.nullcontext(f)


def _zip_over_budget(path: Path, name: str, budget: int) -> InkError:
    return InkError(str(path), "archive", f"archive refused from member {name!r} on: the archive {_past_budget(budget)}",
                    "broken-archive")


def _iter_zip(path: Path, max_bytes: int, wanted=None) -> Iterator[Member | InkError]:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        yield InkError(str(path), "archive", f"not a readable zip archive: {e}", "broken-archive")
        return
    budget = total = inflate_budget(path.stat().st_size)
    with zf:
        for info in zf.infolist():
            try:
                name = safe_name(info.filename, str(path))
            except InkError as e:
                yield e
                continue
            where = f"{path}:{name}"
            if info.is_dir() or (wanted is not None and not wanted(name)):
                continue
            if name.lower().endswith(ARCHIVE_SUFFIXES):
                yield _nested(where)
                continue
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                yield InkError(where, "archive", "member is a symbolic link, not a file", "unsafe-member")
                continue
            if info.flag_bits & 0x1:
                yield InkError(where, "archive", "member is encrypted", "unsafe-member")
                continue
            if info.file_size > max_bytes:
                yield InkError(where, "read", f"member is {info.file_size} bytes, over the limit of {max_bytes}",
                               "too-large")
                continue
            if info.file_size > budget:
                yield _zip_over_budget(path, name, total)
                return
            try:
                with zf.open(info) as f:
                    data = f.read(min(max_bytes, budget) + 1)
            except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError) as e:
                yield InkError(where, "archive", f"member unreadable: {e}", "broken-archive")
                continue
            budget -= len(data)
            if budget < 0:  # the header promised less than the member gives
                yield _zip_over_budget(path, name, total)
                return
            if len(data) > max_bytes:  # the header lied about the size
                yield InkError(where, "read", f"member inflates past the limit of {max_bytes} bytes", "too-large")
                continue
            yield Member(name, data)
