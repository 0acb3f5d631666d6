"""tokenizer.files: the one atomic-write helper (a failed write leaves the old file and no temporary)."""
from __future__ import annotations

import json

import pytest

from tokenizer.files import atomic_path, atomic_write, atomic_write_json


def test_write_replace_and_failed_write_keeps_the_old_file(tmp_path):
    p = tmp_path / "a.json"
    atomic_write_json(p, {"x": 1})
    assert json.loads(p.read_text()) == {"x": 1}
    with pytest.raises(RuntimeError):
        with atomic_path(p) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed")
    assert json.loads(p.read_text()) == {"x": 1}
    assert sorted(q.name for q in tmp_path.iterdir()) == ["a.json"]


def test_stray_temporaries_of_killed_writers_are_removed(tmp_path):
    (tmp_path / ".b.txt.tmp-4242").write_text("left by a kill -9")
    atomic_write(tmp_path / "b.txt", "hello\n", clean=True)
    atomic_write(tmp_path / "c.bin", b"\x00\x01")
    assert sorted(q.name for q in tmp_path.iterdir()) == ["b.txt", "c.bin"]
    assert (tmp_path / "c.bin").read_bytes() == b"\x00\x01"
