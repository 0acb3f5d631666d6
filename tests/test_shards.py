"""Shards: read-back equals what was written (datasets and pyarrow), determinism across worker
counts, kill -9 + --resume, corrupt shards, --keep-ink, the byte cap, --drop-invalid, the CLI."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from datasets_prep.inkml import UsageError, convert, main
from datasets_prep.readers import read_inkml
from datasets_prep.sources import target_label
from datasets_prep.render import png_bytes, render_ink
from datasets_prep.shards import ShardError, load_split, strokes_array
from test_inkml_readers import crohme_file

REPO = Path(__file__).resolve().parents[1]
LABELS = ["$x^2$", "$\\frac{a}{b}$", "$a+b=c$", "$\\sqrt{x}$", "$x_{1}+y$", "$1-2$", "$\\alpha\\beta$",
          "$x^{2}^{3}$"]  # the last is invalid (double superscript): kept and flagged by default


def write_corpus(root: Path, n: int, seed: int = 0) -> list[Path]:
    """n small CROHME-style inks with known labels in root/HAMEX-like subfolders."""
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(n):
        strokes = []
        for _ in range(int(rng.integers(1, 4))):
            pts = rng.integers(0, 500, size=(int(rng.integers(1, 12)), 2))
            strokes.append(", ".join(f"{x} {y}" for x, y in pts))
        if sum(s.count(",") + 1 for s in strokes) < 2:
            strokes.append("0 0")
        p = root / f"w{i % 3}" / f"f{i:05d}.inkml"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(crohme_file(strokes, truth=LABELS[i % len(LABELS)], crlf=bool(i % 2)))
        paths.append(p)
    return paths


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus") / "train"
    write_corpus(root, 120)
    return root


@pytest.fixture(scope="module")
def converted(corpus, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("out") / "shards"
    summary = convert("crohme", [corpus], out, workers=2, shard_size=25, keep_ink=True, preview=6)
    return out, summary


def test_summary_accounts_for_every_input(converted):
    out, summary = converted
    s = summary["splits"]["train"]
    assert s["inputs"] == 120 and s["rows"] == 120 and s["quarantined"] == 0
    assert s["invalid_labels"] == 120 // len(LABELS)  # every 8th label is the double superscript
    assert s["shards"] == 5  # 120 files / 25 per shard
    assert json.loads((out / "summary.json").read_text())["totals"]["rows"] == 120
    assert (out / "quarantine.jsonl").read_text() == ""
    assert summary["files_per_s"] > 0


def test_read_back_via_pyarrow_equals_a_fresh_conversion(converted, corpus):
    out, _ = converted
    table = load_split(out / "train")
    assert table.num_rows == 120
    rows = table.to_pylist()
    files = sorted(corpus.rglob("*.inkml"), key=lambda p: p.relative_to(corpus).as_posix())
    assert [r["path"] for r in rows] == [f"train/{p.relative_to(corpus).as_posix()}" for p in files]
    for r, p in zip(rows, files):
        ink = read_inkml(p.read_bytes(), str(p))
        latex, raw = target_label(ink, "crohme")
        assert r["image"]["bytes"] == png_bytes(render_ink(ink))
        assert (r["latex"], r["latex_raw"], r["source"], r["split"]) == (latex, raw, "crohme", "train")
        assert r["num_strokes"] == ink.num_strokes and r["num_points"] == ink.num_points
        assert r["bbox"] == list(ink.bbox())
        assert [np.array(s) for s in r["strokes"]] and all(
            np.array_equal(np.array(a), b) for a, b in zip(r["strokes"], ink.strokes))
        assert (r["label_error"] is None) == (latex != "x^{2}^{3}")
        assert json.loads(r["annotations"])["writer"] == "w01"


def test_read_back_via_datasets(converted):
    import datasets

    out, _ = converted
    dd = datasets.load_from_disk(str(out))
    assert list(dd) == ["train"] and dd["train"].num_rows == 120
    one = datasets.load_from_disk(str(out / "train"))
    row = one[7]
    assert isinstance(row["image"], Image.Image) and row["image"].mode == "L" and row["image"].size == (224, 224)
    assert row["latex"] == load_split(out / "train").column("latex")[7].as_py()
    assert dd["train"].features["image"].__class__.__name__ == "Image"


def test_preview_sheet_written(converted):
    out, summary = converted
    im = Image.open(out / "preview.png")
    assert im.size[0] >= 4 * 224 and summary["preview"].endswith("preview.png")


def test_row_order_and_bytes_independent_of_worker_count(corpus, tmp_path):
    a = convert("crohme", [corpus], tmp_path / "w1", workers=1, shard_size=25)
    b = convert("crohme", [corpus], tmp_path / "w2", workers=2, shard_size=25)
    assert a["splits"] == b["splits"]
    names = sorted(p.name for p in (tmp_path / "w1/train").glob("*.arrow"))
    assert names == sorted(p.name for p in (tmp_path / "w2/train").glob("*.arrow")) and len(names) == 5
    for n in names:
        assert (tmp_path / "w1/train" / n).read_bytes() == (tmp_path / "w2/train" / n).read_bytes()


def test_byte_cap_splits_a_shard_into_parts(corpus, tmp_path):
    convert("crohme", [corpus], tmp_path / "o", workers=1, shard_size=120, max_shard_bytes=40_000)
    files = json.loads((tmp_path / "o/train/state.json").read_text())["_data_files"]
    assert len(files) > 1 and all(f["filename"].startswith("data-00000-") for f in files)
    assert load_split(tmp_path / "o/train").num_rows == 120


def test_drop_invalid_moves_them_to_quarantine(corpus, tmp_path):
    s = convert("crohme", [corpus], tmp_path / "o", workers=1, drop_invalid=True)
    assert s["splits"]["train"]["rows"] == 120 - 15
    q = [json.loads(line) for line in (tmp_path / "o/quarantine.jsonl").read_text().splitlines()]
    assert len(q) == 15 and all(r["stage"] == "label" and r["kind"] == "invalid-label" for r in q)
    assert all("double" in r["error"] or "script" in r["error"] for r in q)


def test_out_folder_rules(corpus, tmp_path):
    out = tmp_path / "o"
    convert("crohme", [corpus], out, workers=1, limit=5)
    with pytest.raises(UsageError, match="--resume"):
        convert("crohme", [corpus], out, workers=1, limit=5)
    with pytest.raises(UsageError, match="options/inputs differ"):
        convert("crohme", [corpus], out, workers=1, limit=6, resume=True)
    with pytest.raises(UsageError, match="options/inputs differ"):  # a glyph cap changes the images
        convert("crohme", [corpus], out, workers=1, limit=5, resume=True, max_glyph=20.0)
    with pytest.raises(UsageError, match="max_glyph must be >= 0"):
        convert("crohme", [corpus], tmp_path / "neg", workers=1, max_glyph=-1.0)
    s = convert("crohme", [corpus], out, workers=1, limit=5, resume=True)  # finished run: all resumed
    assert s["resumed_shards"] == 1 and s["processed_this_run"] == 0 and s["totals"]["rows"] == 5
    convert("crohme", [corpus], out, workers=1, limit=7, overwrite=True)
    assert load_split(out / "train").num_rows == 7
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    with pytest.raises(UsageError, match="refusing"):
        convert("crohme", [corpus], foreign, overwrite=True)
    assert (foreign / "keep.txt").exists()


def test_cli_exit_codes(corpus, tmp_path, capsys):
    assert main(["--src", "crohme", "--input", str(corpus), "--out", str(tmp_path / "o"), "--limit", "3",
                 "--quiet", "--workers", "1"]) == 0
    assert main(["--src", "crohme", "--input", str(tmp_path / "missing"), "--out", str(tmp_path / "p")]) == 2
    assert "input not found" in capsys.readouterr().err
    assert main(["--src", "crohme", "--input", str(corpus), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert main(["--src", "crohme", "--input", str(corpus), "--out", str(tmp_path / "q"), "--size", "2x",
                 "--quiet"]) == 2
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0


def test_no_input_converts_the_fixtures(tmp_path, capsys):
    if not (REPO / "fixtures/crohme").is_dir():
        pytest.skip("fixtures/ not generated")
    s = convert("crohme", None, tmp_path / "o", workers=1, log=print)
    assert "bundled fixtures" in capsys.readouterr().out
    assert s["totals"]["rows"] == s["totals"]["inputs"] > 0 and set(s["split_names"]) == {"train", "test"}


# ---------------------------------------------------------------- corrupt shards

def test_truncated_or_corrupt_shard_names_the_file(converted, tmp_path):
    import shutil

    out, _ = converted
    bad = tmp_path / "bad"
    shutil.copytree(out / "train", bad)
    shard = bad / "data-00002.arrow"
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    with pytest.raises(ShardError, match="data-00002.arrow"):
        load_split(bad)
    shard.write_bytes(b"\x00garbage" * 10)
    with pytest.raises(ShardError, match="data-00002.arrow: corrupt"):
        load_split(bad)
    shard.unlink()
    with pytest.raises(ShardError, match="missing"):
        load_split(bad)
    (bad / "state.json").write_text("{")
    with pytest.raises(ShardError, match="state.json"):
        load_split(bad)


def test_shard_with_rows_missing_at_a_batch_boundary_is_caught(converted, tmp_path):
    import shutil

    out, _ = converted
    bad = tmp_path / "bad"
    shutil.copytree(out / "train", bad)
    t = load_split(out / "train")
    # replace a shard by a valid stream holding fewer rows: only the recorded counts reveal it
    part = pa.ipc.open_stream(pa.memory_map(str(out / "train/data-00001.arrow"))).read_all().slice(0, 3)
    with pa.OSFile(str(bad / "data-00001.arrow"), "wb") as f, pa.ipc.new_stream(f, part.schema) as w:
        w.write_table(part)
    with pytest.raises(ShardError, match="3 rows, 25 recorded"):
        load_split(bad)
    assert t.num_rows == 120


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.lists(st.tuples(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6)), min_size=1, max_size=5),
                         max_size=4), max_size=6))
def test_strokes_column_round_trip(rows):
    arrs = [[np.array(s, dtype=np.float64) for s in r] for r in rows]
    back = strokes_array(arrs).to_pylist()
    assert len(back) == len(rows)
    for got, want in zip(back, arrs):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.array(g, dtype=np.float64).reshape(w.shape), w)


# ---------------------------------------------------------------- kill -9 and resume

def test_kill_minus_9_then_resume_loses_and_doubles_nothing(tmp_path):
    root = tmp_path / "big" / "train"
    write_corpus(root, 1600, seed=1)
    ref = convert("crohme", [root], tmp_path / "ref", workers=1, shard_size=40)
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "datasets_prep.inkml", "--src", "crohme", "--input", str(root), "--out", str(out),
           "--workers", "2", "--shard-size", "40", "--quiet"]
    proc = subprocess.Popen(cmd, cwd=REPO, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    try:
        while time.time() < deadline and proc.poll() is None:
            done = list((out / ".progress" / "train").glob("*.json")) if (out / ".progress/train").is_dir() else []
            if len(done) >= 3:
                break
            time.sleep(0.01)
        assert proc.poll() is None, "the run finished before it could be killed; make the corpus bigger"
        os.killpg(proc.pid, signal.SIGKILL)  # the CLI and its workers, all at once
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert not (out / "summary.json").exists()
    s = convert("crohme", [root], out, workers=2, shard_size=40, resume=True)
    assert s["resumed_shards"] >= 3 and s["processed_this_run"] < 1600
    assert s["splits"] == ref["splits"]
    got, want = load_split(out / "train"), load_split(tmp_path / "ref" / "train")
    assert got.column("path").to_pylist() == want.column("path").to_pylist()
    assert len(set(got.column("sample_id").to_pylist())) == 1600
    assert got.equals(want)
    assert not list(out.rglob(".*.tmp-*"))


coords = st.integers(-5000, 5000)
ink_strategy = st.lists(st.lists(st.tuples(coords, coords), min_size=1, max_size=15), min_size=1, max_size=4)


@settings(max_examples=12, deadline=None)
@given(inks=st.lists(ink_strategy, min_size=1, max_size=6), shard_size=st.integers(1, 4),
       keep_ink=st.booleans())
def test_convert_then_load_returns_what_was_written(tmp_path_factory, inks, shard_size, keep_ink):
    """Property: for any inks, the shards hold exactly the renders, labels and strokes of the files,
    in input order, however they are cut into shards."""
    root = tmp_path_factory.mktemp("prop") / "train"
    root.mkdir()
    written = []
    for i, strokes in enumerate(inks):
        if sum(len(s) for s in strokes) < 2:
            strokes = strokes + [[(0, 0)]]
        p = root / f"{i:03d}.inkml"
        p.write_bytes(crohme_file([", ".join(f"{x} {y}" for x, y in s) for s in strokes], truth=f"$x_{{{i}}}$"))
        written.append((p, strokes))
    out = root.parent / "out"
    s = convert("crohme", [root], out, workers=1, shard_size=shard_size, keep_ink=keep_ink)
    assert s["totals"]["rows"] == len(inks)
    rows = load_split(out / "train").to_pylist()
    for row, (p, strokes) in zip(rows, written):
        ink = read_inkml(p.read_bytes(), str(p))
        assert row["path"] == f"train/{p.name}" and row["latex"] == f"x_{{{p.stem.lstrip('0') or '0'}}}"
        assert row["image"]["bytes"] == png_bytes(render_ink(ink))
        if keep_ink:
            assert row["strokes"] == [[[float(x), float(y)] for x, y in st_] for st_ in strokes]
        else:
            assert "strokes" not in row


def _die_on_third_shard(split, index, items, split_dir, opts):
    """Stands in for worker.convert_chunk in a forked worker: the process dies on shard 2."""
    from datasets_prep.worker import convert_chunk

    if index == 2:
        os._exit(3)
    return convert_chunk(split, index, items, split_dir, opts)


def test_a_dying_worker_is_reported_and_resume_finishes(corpus, tmp_path, monkeypatch, capsys):
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("needs the fork start method to hand the patched function to workers")
    import datasets_prep.convert as converter

    out = tmp_path / "o"
    monkeypatch.setattr(converter, "convert_chunk", _die_on_third_shard)
    argv = ["--src", "crohme", "--input", str(corpus), "--out", str(out), "--workers", "2", "--shard-size", "25",
            "--quiet"]
    assert main(argv) == 1
    assert "worker process died" in capsys.readouterr().err and not (out / "summary.json").exists()
    monkeypatch.undo()
    assert main(argv + ["--resume"]) == 0
    assert load_split(out / "train").num_rows == 120


def test_strict_exits_1_when_something_was_quarantined(tmp_path):
    root = tmp_path / "train"
    write_corpus(root, 3)
    (root / "empty.inkml").write_bytes(b"")
    base = ["--src", "crohme", "--input", str(root), "--workers", "1", "--quiet"]
    assert main(base + ["--out", str(tmp_path / "a")]) == 0
    assert main(base + ["--out", str(tmp_path / "b"), "--strict"]) == 1
