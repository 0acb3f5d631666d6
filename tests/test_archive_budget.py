"""Archives inflate within a budget (max(INFLATE_FLOOR, INFLATE_RATIO x their size)): a bz2 or zip
bomb is refused after a bounded amount of work, and the members before it are kept."""
from __future__ import annotations

import bz2
import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from datasets_prep import archive
from datasets_prep.archive import INFLATE_RATIO, Member, inflate_budget, iter_members
from datasets_prep.readers import InkError

FLOOR = 1 << 20


@pytest.fixture
def small_floor(monkeypatch):
    monkeypatch.setattr(archive, "INFLATE_FLOOR", FLOOR)


def _tar_bz2(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with bz2.open(path, "wb") as f, tarfile.open(fileobj=f, mode="w|") as tf:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def test_budget_is_ratio_of_size_with_a_floor():
    assert inflate_budget(0) == archive.INFLATE_FLOOR
    assert inflate_budget(10 << 30) == INFLATE_RATIO * (10 << 30)


def test_bz2_tar_bomb_refused_after_the_budget(tmp_path, small_floor):
    path = _tar_bz2(tmp_path / "bomb.tar.bz2", [("a.inkml", b"<ink/>"), ("zeros.inkml", bytes(16 << 20)),
                                                   ("b.inkml", b"<ink/>")])
    assert path.stat().st_size < 2000  # 16 MB of zeros in a few hundred bytes
    out = list(iter_members(path, max_bytes=64 << 20))
    assert isinstance(out[0], Member) and out[0].name == "a.inkml"
    assert isinstance(out[-1], InkError) and "inflates past" in str(out[-1]) and "decompression bomb" in str(out[-1])
    assert not any(isinstance(m, Member) and m.name == "b.inkml" for m in out)


def test_tar_within_budget_reads_every_member(tmp_path, small_floor):
    path = _tar_bz2(tmp_path / "ok.tar.bz2", [(f"{i}.inkml", b"<ink/>" * 100) for i in range(20)])
    out = list(iter_members(path, max_bytes=1 << 20))
    assert [m.name for m in out] == [f"{i}.inkml" for i in range(20)]


def test_oversized_member_counts_against_the_budget(tmp_path, small_floor):
    """A member over max_bytes is refused but a tar stream still inflates it: the budget bounds that too."""
    path = _tar_bz2(tmp_path / "big.tar.bz2", [("zeros.inkml", bytes(8 << 20)), ("b.inkml", b"<ink/>")])
    out = list(iter_members(path, max_bytes=1 << 10))
    assert "over the limit" in str(out[0])
    assert isinstance(out[-1], InkError) and "inflates past" in str(out[-1])


def test_zip_of_many_bzip2_members_refused_after_the_budget(tmp_path, small_floor):
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_BZIP2) as zf:
        zf.writestr("first.png", b"x" * 10)
        for i in range(8):
            zf.writestr(f"z{i}.png", bytes(512 << 10))
    out = list(iter_members(path, max_bytes=1 << 20))
    members = [m for m in out if isinstance(m, Member)]
    assert members[0].name == "first.png"
    assert sum(len(m.data) for m in members) <= FLOOR
    assert isinstance(out[-1], InkError) and "inflates past" in str(out[-1]) and "z" in str(out[-1])

