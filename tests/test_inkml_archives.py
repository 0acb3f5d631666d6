"""Inputs as archives and trees: the MathWriting .tgz streamed (splits, unsafe members, symbols.jsonl),
CROHME .zip archives, and symbols.jsonl resolved against train inks in an extracted tree."""
from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datasets_prep.archive import safe_name
from datasets_prep.inkml import convert
from datasets_prep.readers import InkError, read_inkml
from datasets_prep.shards import load_split
from test_inkml_readers import crohme_file, mathwriting_file

TOP = "mathwriting-2024"


def mw_ink(label: str, n_strokes: int = 3) -> bytes:
    traces = [",".join(f"{10 * s + i} {5 * i + s} {100 * s + i}.0" for i in range(4)) for s in range(n_strokes)]
    return mathwriting_file(traces, label=label, normalized=label)


def add(tf: tarfile.TarFile, name: str, data: bytes, **kw) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for k, v in kw.items():
        setattr(info, k, v)
    tf.addfile(info, io.BytesIO(data) if info.isreg() else None)


def make_tgz(path: Path, *, with_symbols_dir: bool, jsonl_first: bool = False) -> None:
    jsonl = b"\n".join(json.dumps(r).encode() for r in [
        {"sourceSampleId": "aaaa000000000001", "strokeIndices": [0, 2], "label": "x"},
        {"sourceSampleId": "aaaa000000000002", "strokeIndices": [1], "label": "\\alpha"},
        {"sourceSampleId": "ffff000000000000", "strokeIndices": [0], "label": "y"},   # no such train ink
        {"sourceSampleId": "aaaa000000000001", "strokeIndices": [7], "label": "z"},   # index out of range
    ]) + b"\nnot json\n"
    with tarfile.open(path, "w:gz") as tf:
        if jsonl_first:
            add(tf, f"{TOP}/symbols.jsonl", jsonl)
        add(tf, f"{TOP}/train", b"", type=tarfile.DIRTYPE)
        add(tf, f"{TOP}/train/aaaa000000000001.inkml", mw_ink("a+b"))
        add(tf, f"{TOP}/train/aaaa000000000002.inkml", mw_ink("\\frac{1}{2}"))
        add(tf, f"{TOP}/valid/bbbb000000000001.inkml", mw_ink("c^{2}"))
        add(tf, f"{TOP}/test/cccc000000000001.inkml", mw_ink("d"))
        add(tf, f"{TOP}/synthetic/dddd000000000001.inkml", mw_ink("e_{1}"))
        add(tf, "../../escape.inkml", mw_ink("evil"))
        add(tf, "/abs/escape.inkml", mw_ink("evil"))
        add(tf, f"{TOP}/train/link.inkml", b"", type=tarfile.SYMTYPE, linkname="../../../etc/passwd")
        add(tf, f"{TOP}/train/broken.inkml", b"<ink")
        if with_symbols_dir:
            add(tf, f"{TOP}/symbols/eeee000000000001.inkml", mathwriting_file(["1 1 0,5 5 1"], label="+",
                                                                               normalized=None))
        add(tf, f"{TOP}/synthetic-bboxes.jsonl", b"{}\n")
        if not jsonl_first:
            add(tf, f"{TOP}/symbols.jsonl", jsonl)


def quarantine(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "quarantine.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("name", ["../x.inkml", "/etc/x.inkml", "a/../../x.inkml", "C:\\x.inkml", "a\\..\\..\\x"])
def test_safe_name_refuses_escapes(name):
    with pytest.raises(InkError) as e:
        safe_name(name, "arch.tgz")
    assert e.value.stage == "archive" and e.value.kind == "unsafe-member"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", ".", "/", "\\", ":", "..", "C:"]), max_size=12).map("".join))
def test_safe_name_never_escapes(name):
    """Property: a name either raises InkError(archive) or is relative with no '..' component."""
    try:
        clean = safe_name(name, "t.tgz")
    except InkError as e:
        assert e.stage == "archive"
        return
    assert not clean.startswith("/") and ".." not in clean.split("/") and "\\" not in clean
    assert not (len(clean) > 1 and clean[1] == ":")


def test_safe_name_normalises():
    assert safe_name("./a//b/./c.inkml", "t") == "a/b/c.inkml"
    assert safe_name("a\\b.inkml", "t") == "a/b.inkml"


def test_tgz_streamed_with_symbols_dir(tmp_path):
    tgz = tmp_path / "mathwriting-2024.tgz"
    make_tgz(tgz, with_symbols_dir=True)
    s = convert("mathwriting", [tgz], tmp_path / "out", workers=1)
    assert s["split_names"] == ["train", "valid", "test", "synthetic", "symbols"]
    rows = {k: v["rows"] for k, v in s["splits"].items()}
    assert rows == {"train": 2, "valid": 1, "test": 1, "synthetic": 1, "symbols": 1}
    q = quarantine(tmp_path / "out")
    kinds = sorted((r["stage"], r["kind"]) for r in q)
    assert kinds == [("archive", "unsafe-member")] * 3 + [("parse", "truncated-or-malformed")]
    assert any("link" in r["error"] for r in q) and any("'..'" in r["error"] for r in q)
    t = load_split(tmp_path / "out/train")
    assert t.column("path").to_pylist() == [f"{TOP}/train/aaaa000000000001.inkml",
                                            f"{TOP}/train/aaaa000000000002.inkml"]
    assert t.column("sample_id").to_pylist() == ["0123456789abcdef"] * 2  # sampleId annotation
    assert load_split(tmp_path / "out/symbols").column("latex").to_pylist() == ["+"]  # `label`, no normalizedLabel
    assert not list(tmp_path.glob("**/escape.inkml")) and not (tmp_path.parent / "escape.inkml").exists()


@pytest.mark.parametrize("jsonl_first", [False, True])
def test_tgz_symbols_jsonl_resolved_against_train_when_symbols_dir_absent(tmp_path, jsonl_first):
    tgz = tmp_path / "mw.tgz"
    make_tgz(tgz, with_symbols_dir=False, jsonl_first=jsonl_first)
    s = convert("mathwriting", [tgz], tmp_path / "out", workers=1, splits=["symbols"], min_points=1)
    t = load_split(tmp_path / "out/symbols")
    assert t.column("latex").to_pylist() == ["x", "\\alpha"]
    assert t.column("num_strokes").to_pylist() == [2, 1]
    src = read_inkml(mw_ink("a+b"), "src")
    assert t.column("bbox")[0].as_py() == [src.strokes[0][:, 0].min(), src.strokes[0][:, 1].min(),
                                           src.strokes[2][:, 0].max(), src.strokes[2][:, 1].max()]
    q = [r for r in quarantine(tmp_path / "out") if r["stage"] == "symbols"]
    assert sorted(r["kind"] for r in q) == ["bad-stroke-index", "bad-symbols-line", "missing-source-ink"]
    assert s["splits"]["symbols"]["inputs"] == 3  # + the bad line and the missing ink, at enumeration


def test_tree_symbols_jsonl(tmp_path):
    root = tmp_path / TOP
    (root / "train").mkdir(parents=True)
    (root / "train/aaaa000000000001.inkml").write_bytes(mw_ink("a+b"))
    (root / "symbols.jsonl").write_text(json.dumps({"sourceSampleId": "aaaa000000000001", "strokeIndices": [1],
                                                    "label": "b"}) + "\n")
    s = convert("mathwriting", [root], tmp_path / "out", workers=1, min_points=1)
    assert s["split_names"] == ["train", "symbols"]
    row = load_split(tmp_path / "out/symbols").to_pylist()[0]
    assert row["latex"] == "b" and row["path"] == "symbols.jsonl:1" and row["sample_id"] == "aaaa000000000001-glyph1"
    assert json.loads(row["annotations"])["strokeIndices"] == "[1]"


def test_single_mathwriting_split_folder(tmp_path):
    d = tmp_path / "valid"
    d.mkdir()
    (d / "bbbb000000000001.inkml").write_bytes(mw_ink("c"))
    s = convert("mathwriting", [d], tmp_path / "out", workers=1)
    assert s["split_names"] == ["valid"] and s["totals"]["rows"] == 1


def test_crohme_zip_and_split_override(tmp_path):
    z = tmp_path / "CROHME2019-test.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("Test/INKML/a.inkml", crohme_file(["1 2, 3 4"], truth="$a$"))
        zf.writestr("Test/INKML/b.INKML", crohme_file(["1 2, 3 4"], truth="$b$"))
        zf.writestr("../evil.inkml", crohme_file(["1 2, 3 4"], truth="$e$"))
        zf.writestr("Test/readme.txt", "ignored")
        link = zipfile.ZipInfo("Test/INKML/link.inkml")
        link.external_attr = (0o120777 << 16)
        zf.writestr(link, "/etc/passwd")
    s = convert("crohme", [z], tmp_path / "out", workers=1)
    assert s["split_names"] == ["CROHME2019_test"]
    assert load_split(tmp_path / "out/CROHME2019_test").column("latex").to_pylist() == ["a", "b"]
    assert sorted(r["kind"] for r in quarantine(tmp_path / "out")) == ["unsafe-member", "unsafe-member"]
    s = convert("crohme", [z], tmp_path / "out2", workers=1, split="test")
    assert s["split_names"] == ["test"]


def test_broken_archive_keeps_what_was_read(tmp_path):
    tgz = tmp_path / "mw.tgz"
    make_tgz(tgz, with_symbols_dir=True)
    data = tgz.read_bytes()
    cut = tmp_path / "cut.tgz"
    cut.write_bytes(data[: len(data) * 2 // 3])
    s = convert("mathwriting", [cut], tmp_path / "out", workers=1)
    q = quarantine(tmp_path / "out")
    assert any(r["kind"] == "broken-archive" and "cut.tgz" in r["path"] for r in q)
    assert s["totals"]["rows"] >= 1  # the members before the damage were converted
    bogus = tmp_path / "bogus.zip"
    bogus.write_bytes(b"PK\x03\x04 nope")
    s = convert("crohme", [bogus], tmp_path / "out2", workers=1)
    assert s["totals"]["rows"] == 0 and quarantine(tmp_path / "out2")[0]["kind"] == "broken-archive"


def test_resume_of_a_streamed_tgz_redoes_only_missing_shards(tmp_path):
    tgz = tmp_path / "mw.tgz"
    with tarfile.open(tgz, "w:gz") as tf:
        for i in range(30):
            add(tf, f"{TOP}/train/{i:016x}.inkml", mw_ink(f"x_{{{i}}}"))
    out = tmp_path / "out"
    full = convert("mathwriting", [tgz], out, workers=1, shard_size=7)
    want = load_split(out / "train")
    # simulate a crash after three shards: drop the later shards, their markers and the final files
    for i in (3, 4):
        (out / f"train/data-{i:05d}.arrow").unlink()
        (out / f".progress/train/{i:05d}.json").unlink()
    (out / "summary.json").unlink()
    again = convert("mathwriting", [tgz], out, workers=2, shard_size=7, resume=True)
    assert again["resumed_shards"] == 3 and again["processed_this_run"] == 30 - 21
    assert again["splits"] == full["splits"] and load_split(out / "train").equals(want)


def test_a_gzip_bomb_member_is_inflated_a_bounded_chunk_at_a_time(tmp_path):
    """A 64 KB gzip chunk of zeros inflates to 64 MB; the reader inflates at most OUT_CHUNK per step and
    hands bytes out from an offset, so an oversized member costs linear time and the next one is read."""
    import gzip
    import io
    import tarfile

    from datasets_prep.archive import Member, _GunzipStream, iter_members

    path = tmp_path / "bomb.tgz"
    with tarfile.open(path, "w:gz") as tf:
        for name, data in (("big.inkml", b"\0" * (48 << 20)), ("small.inkml", b"<ink/>")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    out = list(iter_members(path, 1 << 20))
    assert "over the limit" in str(out[0]) and isinstance(out[1], Member) and out[1].data == b"<ink/>"
    stream = _GunzipStream(io.BytesIO(gzip.compress(b"\0" * (8 << 20))))
    total, buf = 0, bytearray(10240)
    while (n := stream.readinto(buf)):
        total += n
        assert len(stream._buf) <= _GunzipStream.OUT_CHUNK
    assert total == 8 << 20 and not stream.truncated
