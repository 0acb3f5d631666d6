"""Issue 23: every hostile file is refused by design, with one line naming the file: no outside
program runs, memory stays bounded, nothing is written outside --out, nothing is lost in silence.
Each hostile file is made by its test."""
from __future__ import annotations

import io
import json
import os
import pickle
import stat
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from datasets_prep.images import main as images_main
from datasets_prep.safe_pickle import PickleRefused, loads
from test_images import SIZE, ink_image, png

REPO = Path(__file__).resolve().parents[1]
EPS = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 100 40\n"


def records(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "quarantine.jsonl").read_text().splitlines() if x.strip()]


def folder_dataset(root: Path, files: dict[str, bytes], labels: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "labels.tsv").write_text(labels)
    for name, data in files.items():
        (root / name).write_bytes(data)
    return root


def images(*args: str) -> int:
    return images_main([*args, "--quiet", "--workers", "1", "--size", f"{SIZE[0]}x{SIZE[1]}"])


# ---------------------------------------------------------------- 1. no outside program

@pytest.fixture
def fake_gs(tmp_path, monkeypatch) -> Path:
    """A `gs` first on PATH that records it ran (Pillow's EPS plugin calls Ghostscript)."""
    bin_dir, marker = tmp_path / "bin", tmp_path / "gs-ran"
    bin_dir.mkdir()
    (bin_dir / "gs").write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    (bin_dir / "gs").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return marker


def test_an_eps_named_png_never_reaches_ghostscript(tmp_path, fake_gs):
    from train.predict import load_input

    d = folder_dataset(tmp_path / "in", {"f.png": EPS, "ok.png": png(ink_image(1))}, "f\tx\nok\ty\n")
    assert images("--src", "folder", "--input", str(d), "--out", str(tmp_path / "o")) == 0
    bad = [r for r in records(tmp_path / "o") if r["path"].endswith("f.png")]
    assert len(bad) == 1 and "PostScript" in bad[0]["error"]
    with pytest.raises(ValueError, match="not an image"):
        load_input(d / "f.png", SIZE)
    assert not fake_gs.exists()


# ---------------------------------------------------------------- 2. pickle memory bombs

def _reconstruct_pickle(shape: tuple, dtype_spec, state: bytes | None = None) -> bytes:
    """numpy's array pickle by hand: _reconstruct(ndarray, shape, dtype) with or without a state."""
    p = (b"\x80\x02cnumpy._core.multiarray\n_reconstruct\ncnumpy\nndarray\n"
         + pickle.dumps(shape, 2)[2:-1] + b"cnumpy\ndtype\n" + pickle.dumps(dtype_spec, 2)[2:-1]
         + b"\x85R" + b"\x87R")
    if state is not None:
        p += pickle.dumps((1, shape, np.dtype("u1"), False, state), 2)[2:-1] + b"b"
    return b"\x80\x02}X\x01\x00\x00\x00a" + p[2:] + b"s."


def test_an_array_without_its_bytes_is_refused_not_allocated():
    subarray = _reconstruct_pickle((1,), ("<f8", (40_000_000,)))
    assert len(subarray) < 250
    with pytest.raises(PickleRefused):
        loads(subarray)
    with pytest.raises(PickleRefused, match="no data|uninitialized"):
        loads(_reconstruct_pickle((1,), "u1"))  # no state: numpy would hand out heap bytes
    ok = loads(_reconstruct_pickle((2, 2), "u1", b"\x01\x02\x03\x04"))
    assert ok["a"].tolist() == [[1, 2], [3, 4]]
    with pytest.raises(PickleRefused, match="data bytes"):
        loads(_reconstruct_pickle((100, 100), "u1", b"\x01\x02\x03\x04"))


def test_a_repeated_reference_cannot_multiply_memory():
    """One 1 MB bytes object memoized and named by 50 array states: 50 MB of arrays from a 1 MB file."""
    assert loads(_memo_bomb(1 << 10, 3))[2].shape == (1 << 10,)  # a few references: within the budget
    with pytest.raises(PickleRefused, match="multiple of its own size"):
        loads(_memo_bomb(1 << 20, 50))


def _memo_bomb(nbytes: int, copies: int) -> bytes:
    """A list of `copies` arrays whose states all reference one memoized bytes object."""
    out = io.BytesIO()
    out.write(b"\x80\x02]q\x00(")
    raw = b"\x00" * nbytes
    for i in range(copies):
        out.write(b"cnumpy._core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85cnumpy\ndtype\nX\x02\x00\x00\x00u1"
                  b"\x85R\x87R")
        out.write(b"(K\x01" + pickle.dumps((nbytes,), 2)[2:-1] + b"cnumpy\ndtype\nX\x02\x00\x00\x00u1\x85R\x89")
        if i == 0:
            out.write(b"C" if nbytes < 256 else b"B" + struct.pack("<I", nbytes))
            out.write(raw + b"q\x01")
        else:
            out.write(b"h\x01")
        out.write(b"tb")
    out.write(b"e.")
    return out.getvalue()


# ---------------------------------------------------------------- 3. archive memory, measured

PEAK = """
import resource, sys
from datasets_prep.images import main
rc = main(["--src", "comer", "--input", sys.argv[1], "--out", sys.argv[2], "--workers", "1", "--quiet"])
print(rc, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


def _peak_rss_mb(zip_path: Path, out: Path) -> int:
    proc = subprocess.run([sys.executable, "-c", PEAK, str(zip_path), str(out)], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return int(proc.stdout.split()[1])


def test_archive_members_in_memory_are_bounded_whatever_the_shard_size(tmp_path):
    """30 members of 33 MB of zeros (the per-member cap is 32 MiB) in a 966 KB zip: 1072 MB peak RSS
    before the in-flight window, 276 MB with it against a 143 MB base (one tiny member); the bound is the
    base + one 64 MB chunk + one member."""
    big, small = tmp_path / "big.zip", tmp_path / "small.zip"
    for path, n, size in ((big, 30, 33_000_000), (small, 1, 1000)):
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("data/train/caption.txt", "".join(f"m{i}\tx\n" for i in range(n)))
            for i in range(n):
                z.writestr(f"data/train/img/m{i}.bmp", b"\0" * size)
    assert big.stat().st_size < 1_100_000
    base, worst = _peak_rss_mb(small, tmp_path / "o1"), _peak_rss_mb(big, tmp_path / "o2")
    print(f"peak RSS: base {base} MB, 30 x 33 MB members {worst} MB")
    assert worst - base < 200, (base, worst)


# ---------------------------------------------------------------- 4. safetensors

def _safetensors(header, body: bytes = b"\0" * 16) -> bytes:
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + body


@pytest.mark.parametrize("header,needle", [
    ({f"t{i}": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]} for i in range(300)}, "overlaps"),
    ({"a": {"dtype": "F32", "shape": [4], "data_offsets": ["0", "16"]}}, "data_offsets"),
    ({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0.0, 16.0]}}, "data_offsets"),
    ({"a": {"dtype": ["F32"], "shape": [4], "data_offsets": [0, 16]}}, "dtype"),
    ({"a": {"dtype": "F32", "shape": "4", "data_offsets": [0, 16]}}, "shape"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, "after the last tensor"),
    ({"a": "x"}, "not an object"),
    ({"a": {"dtype": "F32", "shape": [10**30], "data_offsets": [0, 16]}}, "need"),
    ({"a": {"dtype": "F32", "shape": [2**32, 2**32], "data_offsets": [0, 16]}}, "need"),
    ([1, 2], "not an object"),
    (b"[" * 100_000 + b"]" * 100_000, "nests too deeply"),
])
def test_safetensors_headers_are_type_checked_and_tiled(tmp_path, header, needle):
    from model.encoder_init import EncoderInitError, read_safetensors

    f = tmp_path / "w.safetensors"
    f.write_bytes(_safetensors(header))
    with pytest.raises(EncoderInitError) as e:
        read_safetensors(f)
    assert str(e.value).startswith(str(f)) and needle in str(e.value) and "\n" not in str(e.value)


def test_a_well_formed_safetensors_still_reads(tmp_path):
    from model.encoder_init import read_safetensors

    f = tmp_path / "w.safetensors"
    f.write_bytes(_safetensors({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]},
                                "__metadata__": {"format": "pt"}}))
    got = read_safetensors(f)
    assert sorted(got) == ["a", "b"] and got["a"].shape == (2,)


# ---------------------------------------------------------------- 5. nothing outside --out

def test_a_split_name_cannot_reach_outside_out(tmp_path, capsys):
    victim = tmp_path / "victim" / "train"
    victim.mkdir(parents=True)
    (victim / "data-00000.arrow").write_bytes(b"precious")
    (victim / "data-00001.arrow").write_bytes(b"precious too")
    d = folder_dataset(tmp_path / "in", {"a.png": png(ink_image(1))}, "a\tx\n")
    out = tmp_path / "deep" / "out"
    for bad in ("../victim/train", "..", ".", "a/b", ".progress", ""):
        assert images("--src", "folder", "--input", str(d), "--out", str(out), "--split", bad) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "plain name" in err, err
    assert images("--src", "folder", "--input", str(d), "--out", str(out), "--splits", "../../victim") == 2
    assert sorted(p.name for p in victim.iterdir()) == ["data-00000.arrow", "data-00001.arrow"]
    assert (victim / "data-00000.arrow").read_bytes() == b"precious"


def test_export_writes_only_under_out(tmp_path, capsys):
    from datasets_prep.export import main as export_main

    d = folder_dataset(tmp_path / "in", {"a.png": png(ink_image(1))}, "a\tx\n")
    shards = tmp_path / "shards"
    assert images("--src", "folder", "--input", str(d), "--out", str(shards), "--split", "train") == 0
    out = tmp_path / "a" / "b" / "out"
    for to, rename in (("tamer", "train=../../x"), ("comer", "train=../../.."), ("tamer", "train=..")):
        assert export_main(["--to", to, "--data", str(shards), "--out", str(out), "--rename", rename]) == 2
        assert "plain name" in capsys.readouterr().err
    assert not (tmp_path / "a" / "x").exists() and not out.exists()
    planted = tmp_path / "planted"
    (shards / "dataset_dict.json").write_text(json.dumps({"splits": ["../planted"]}))
    assert export_main(["--to", "tamer", "--data", str(shards), "--out", str(out)]) == 2
    assert "not a plain folder name" in capsys.readouterr().err and not planted.exists()
    (shards / "dataset_dict.json").write_text(json.dumps({"splits": ["train"]}))
    assert export_main(["--to", "comer", "--data", str(shards), "--out", str(out)]) == 0
    with zipfile.ZipFile(out / "data.zip") as z:
        assert all(n.startswith("data/train/") and ".." not in n.split("/") for n in z.namelist())


# ---------------------------------------------------------------- 6. links

def test_links_followed_inside_the_input_and_refused_when_they_leave_it(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n" * 50)
    tamer = tmp_path / "tamer"
    (tamer / "train").mkdir(parents=True)
    (tamer / "train" / "images.pkl").write_bytes(pickle.dumps({"a": ink_image(1)}))
    os.symlink(secret, tamer / "train" / "caption.txt")
    assert images("--src", "tamer", "--input", str(tamer), "--out", str(tmp_path / "o")) == 1
    text = (tmp_path / "o" / "quarantine.jsonl").read_text()
    assert "root:x" not in text and "leaves the input folder" in text

    outside = tmp_path / "elsewhere"
    folder_dataset(outside, {"b.png": png(ink_image(2))}, "b\tz\n")
    d = folder_dataset(tmp_path / "in", {"a.png": png(ink_image(1))}, "a\tx\nsub/c\ty\n")
    (d / "real").mkdir()
    (d / "real" / "c.png").write_bytes(png(ink_image(3)))
    os.symlink(d / "real", d / "sub")            # inside the input: followed
    os.symlink(outside, d / "away")              # leaves it: refused, said
    os.symlink(d, d / "real" / "loop")           # a loop: refused, said
    assert images("--src", "folder", "--input", str(d), "--out", str(tmp_path / "o2")) == 0
    kinds = {Path(r["path"]).name: r["kind"] for r in records(tmp_path / "o2")}
    assert kinds.get("away") == "link-outside" and kinds.get("loop") == "link-loop", kinds
    from datasets_prep.shards import load_split
    assert sorted(load_split(tmp_path / "o2" / "in").column("latex").to_pylist()) == ["x", "y"]


# ---------------------------------------------------------------- 7. special files

def test_a_fifo_and_a_device_are_refused_without_hanging(tmp_path):
    d = folder_dataset(tmp_path / "in", {"a.png": png(ink_image(1))}, "a\tx\nb\ty\nz\tw\n")
    os.mkfifo(d / "b.png")
    try:
        os.mknod(d / "z.png", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero
    except (PermissionError, OSError):
        os.symlink("/dev/zero", d / "z.png")  # not root: a link to it (leaves the input: refused too)
    code = ("import sys; from datasets_prep.images import main; sys.exit(main(['--src', 'folder', '--input', "
            f"{str(d)!r}, '--out', {str(tmp_path / 'o')!r}, '--quiet', '--workers', '1']))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    why = {Path(r["path"]).name: r["error"] for r in records(tmp_path / "o")}
    assert "FIFO" in why["b.png"] and ("character device" in why["z.png"] or "leaves" in why["z.png"])

    from train.predict import load_input
    for bad, needle in ((d / "b.png", "FIFO"), (Path("/dev/zero"), "character device")):
        with pytest.raises(ValueError, match=needle):
            load_input(bad, SIZE)
    huge = tmp_path / "huge.png"
    with open(huge, "wb") as f:
        f.truncate(600 << 20)  # sparse: 600 MB that would be read whole
    with pytest.raises(ValueError, match="over the limit"):
        load_input(huge, SIZE)


# ---------------------------------------------------------------- 8. nothing silently lost or mislabelled

def test_labels_tsv_splits_at_the_tab(tmp_path):
    from datasets_prep.shards import load_split

    d = folder_dataset(tmp_path / "in", {"a b.png": png(ink_image(1)), "a.png": png(ink_image(2))},
                       "a b.png\t\\frac{1}{2}\na.png\tx\n")
    assert images("--src", "folder", "--input", str(d), "--out", str(tmp_path / "o")) == 0
    t = load_split(tmp_path / "o" / "in")
    assert dict(zip(t.column("sample_id").to_pylist(), t.column("latex").to_pylist())) == {
        "a b": "\\frac{1}{2}", "a": "x"}


def test_resume_after_an_input_was_replaced_is_refused(tmp_path, capsys):
    d = folder_dataset(tmp_path / "in", {"a.png": png(ink_image(1)), "b.png": png(ink_image(2))}, "a\tx\nb\ty\n")
    out = tmp_path / "o"
    assert images("--src", "folder", "--input", str(d), "--out", str(out), "--shard-size", "1") == 0
    (d / "b.png").unlink()
    (d / "c.png").write_bytes(png(ink_image(3)))
    (d / "labels.tsv").write_text("a\tx\nc\ty\n")
    assert images("--src", "folder", "--input", str(d), "--out", str(out), "--shard-size", "1", "--resume") == 2
    assert "input files changed" in capsys.readouterr().err


def test_export_refuses_a_negative_pad_and_an_out_that_is_a_file(tmp_path, capsys):
    from datasets_prep.export import main as export_main

    d = folder_dataset(tmp_path / "in", {"a.png": png(ink_image(1))}, "a\tx\n")
    assert images("--src", "folder", "--input", str(d), "--out", str(tmp_path / "s")) == 0
    assert export_main(["--to", "tamer", "--data", str(tmp_path / "s"), "--out", str(tmp_path / "e"),
                        "--pad=-1000"]) == 2
    assert "--pad" in capsys.readouterr().err and not (tmp_path / "e").exists()
    (tmp_path / "file").write_text("x")
    assert export_main(["--to", "comer", "--data", str(tmp_path / "s"), "--out", str(tmp_path / "file")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a folder" in err


def test_an_archive_inside_an_archive_input_is_quarantined(tmp_path):
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr("x.png", png(ink_image(3)))
    with zipfile.ZipFile(tmp_path / "d.zip", "w") as z:
        z.writestr("labels.tsv", "a\tx\n")
        z.writestr("a.png", png(ink_image(1)))
        z.writestr("more.zip", inner.getvalue())
    assert images("--src", "folder", "--input", str(tmp_path / "d.zip"), "--out", str(tmp_path / "o")) == 0
    assert [r["kind"] for r in records(tmp_path / "o")] == ["nested-archive"]


# ---------------------------------------------------------------- 9. bad input is not a bug

def test_a_lab_tiff_is_read_and_a_deep_symlg_is_refused_naming_the_lg(tmp_path):
    from datasets_prep.shards import load_split

    a = np.stack([ink_image(1), np.full((60, 160), 128, np.uint8), np.full((60, 160), 128, np.uint8)], -1)
    buf = io.BytesIO()
    Image.fromarray(a, "LAB").save(buf, format="TIFF")
    d = folder_dataset(tmp_path / "in", {"a.tif": buf.getvalue()}, "a\tx\n")
    assert images("--src", "folder", "--input", str(d), "--out", str(tmp_path / "o")) == 0
    assert load_split(tmp_path / "o" / "in").num_rows == 1

    tc = tmp_path / "TC11" / "IMG" / "test" / "s"
    tc.mkdir(parents=True)
    (tc / "deep.png").write_bytes(png(ink_image(2)))
    (tc / "big.png").write_bytes(png(ink_image(3)))
    lg = tmp_path / "TC11" / "SymLG" / "test" / "s"
    lg.mkdir(parents=True)
    (lg / "deep.lg").write_text("\n".join([f"O, s{i}, x, 1.0, O" for i in range(1001)]
                                          + [f"R, s{i}, s{i + 1}, Sup, 1.0" for i in range(1000)]))
    (lg / "big.lg").write_text("O, a, x, 1.0, O\n" + "#" * (2 << 20))
    rc = images_main(["--src", "crohme2023", "--input", str(tmp_path / "TC11"), "--out", str(tmp_path / "o2"),
                      "--quiet", "--workers", "1", "--max-file-mb", "1"])
    recs = {Path(r["path"].split(":")[0]).name: r for r in records(tmp_path / "o2")}
    assert rc == 1 and not any(r["stage"] == "internal" for r in recs.values()), recs
    assert recs["deep.lg"]["kind"] == "bad-symlg" and "nested" in recs["deep.lg"]["error"]
    assert recs["big.lg"]["kind"] == "too-large"


# ---------------------------------------------------------------- 10. unwritable output

def test_an_unwritable_or_full_output_is_one_line(tmp_path, capsys, monkeypatch):
    import errno

    import datasets_prep.convert as convert_mod
    import datasets_prep.worker as worker_mod

    d = folder_dataset(tmp_path / "in", {"a.png": png(ink_image(1))}, "a\tx\n")
    (tmp_path / "file").write_text("x")
    assert images("--src", "folder", "--input", str(d), "--out", str(tmp_path / "file")) == 2
    assert "not a folder" in capsys.readouterr().err

    def refuse(*a, **k):
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "ro"))
    monkeypatch.setattr(convert_mod, "write_json", refuse)
    assert images("--src", "folder", "--input", str(d), "--out", str(tmp_path / "ro")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot be written" in err
    monkeypatch.undo()

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "full" / "in" / "data-00000.arrow"))
    monkeypatch.setattr(worker_mod, "write_table", full)
    assert images("--src", "folder", "--input", str(d), "--out", str(tmp_path / "full")) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "No space left" in err and "Traceback" not in err


# ---------------------------------------------------------------- 11. corpora judged by content

@pytest.mark.parametrize("fmt", ["BMP", "TIFF"])
def test_tokenizer_check_refuses_images_by_content(tmp_path, capsys, fmt):
    from tokenizer.check import main as check_main

    f = tmp_path / "corpus.txt"
    Image.new("L", (200, 100), 255).save(f, format=fmt)
    assert check_main([str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "binary data" in err and "corpus.txt" in err


# ---------------------------------------------------------------- 12. smaller ones

def test_a_huge_sparse_rgba_page_is_reduced_and_extra_frames_are_noted(tmp_path):
    from datasets_prep.image_intake import WORK_PIXELS, decode_noted

    page = Image.new("RGBA", (8000, 5000), (0, 0, 0, 0))
    page.paste((0, 0, 0, 255), (2000, 2000, 6000, 2100))
    buf = io.BytesIO()
    page.save(buf, format="PNG")
    im, notes = decode_noted(buf.getvalue())
    assert im.size[0] * im.size[1] <= WORK_PIXELS and "reduced" in notes[0] and im.mode == "RGBA"

    gif = io.BytesIO()
    frames = [Image.fromarray(ink_image(i)) for i in range(3)]
    frames[0].save(gif, format="GIF", save_all=True, append_images=frames[1:])
    d = folder_dataset(tmp_path / "in", {"a.gif": gif.getvalue()}, "a\tx\n")
    assert images("--src", "folder", "--input", str(d), "--out", str(tmp_path / "o")) == 0
    from datasets_prep.shards import load_split
    ann = json.loads(load_split(tmp_path / "o" / "in").column("annotations")[0].as_py())
    assert "3 frames" in ann["note"]


def test_checkpoint_refusals_say_what_the_file_is_and_never_advise_unsafe_loading(tmp_path):
    import torch

    from conftest import Payload
    from model.checkpoint import CheckpointError, load_checkpoint

    text = tmp_path / "notes.pt"
    text.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="not a checkpoint") as e:
        load_checkpoint(text)
    assert "run code" not in str(e.value)
    payload = tmp_path / "payload.pt"
    torch.save({"x": Payload(str(tmp_path / "ran"))}, payload)
    with pytest.raises(CheckpointError, match="could run code") as e:
        load_checkpoint(payload)
    assert "weights_only" not in str(e.value) and "Re-running" not in str(e.value)
    assert not (tmp_path / "ran").exists()


def test_captions_round_trip_text_mode_and_control_spaces():
    from datasets_prep.captions import from_caption, to_caption
    from tokenizer import tokenize

    assert from_caption("\\mbox { T r }") == "\\mbox{Tr}"
    for latex in ("\\mbox{Tr}", "x+\\mbox{ rot }y", "1011\\ 1110_2", "\\text{a\\textbf{b c}}", "x^{2}"):
        assert tokenize(from_caption(to_caption(tokenize(latex)))) == tokenize(latex), latex


@pytest.mark.parametrize("key, value", [("enc_dim", 65536), ("dec_depth", 400), ("max_len", 10**6)])
def test_a_checkpoint_config_cannot_ask_for_memory_its_weights_do_not_have(tmp_path, key, value):
    """The stored config is checked against the stored weights on the meta device before anything is
    built: a 65536-wide encoder beside micro weights is refused by name, without allocating it."""
    import resource

    import torch

    from model import CheckpointError, load
    from serve_helpers import micro_checkpoint

    state = torch.load(micro_checkpoint(tmp_path, steps=20), weights_only=True)
    state["model_config"][key] = value
    bad = tmp_path / "bad.pt"
    torch.save(state, bad)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(CheckpointError, match="another model than the stored weights"):
        load(bad)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 512 * 1024  # KB: no giant build


@pytest.mark.parametrize("argv", [["tokenizer.check", "{x}"], ["tokenizer.check", "{ok}", "--against", "{x}"],
                                  ["datasets_prep.synth", "--labels", "{x}", "--out", "{out}"],
                                  ["datasets_prep.synth", "--count", "2", "--exclude", "{x}", "--out", "{out}"],
                                  ["datasets_prep.synth", "--style", "print", "--labels", "{x}", "--out", "{out}"]])
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_label_file_that_is_a_fifo_or_a_device_is_refused_at_once(tmp_path, argv, kind):
    """A FIFO would block the reader forever and /dev/zero would grow its memory without end."""
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        x = tmp_path / "labels.fifo"
        os.mkfifo(x)
    else:
        x = Path("/dev/zero")
        if not x.exists():
            pytest.skip("no /dev/zero here")
    ok = tmp_path / "ok.txt"
    ok.write_text("x^{2}\n")
    args = [a.format(x=x, ok=ok, out=tmp_path / "out") for a in argv]
    res = subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "not a regular file" in res.stderr, res.stderr[-500:]
    assert "Traceback" not in res.stderr


def test_a_checked_dtype_is_numpys_own_not_the_pickles_object():
    """numpy dtypes take pickle state in place (BUILD); the array is built from a canonical dtype, so a
    state set on the pickle's dtype object after the check cannot change an array already built."""
    import numpy as np

    from datasets_prep.safe_pickle import _plain_dtype

    mine = np.dtype("u1", False, True)  # a copy, as a pickle's dtype() call makes
    checked = _plain_dtype(mine)
    assert checked == np.dtype("u1") and checked is not mine


def test_a_huge_pickled_array_is_reduced_before_any_float_copy():
    """TAMER's pickled arrays go through the 4 MP reduction decoded images get."""
    import numpy as np

    from datasets_prep.sources.raster import gray_from_array

    big = np.full((3000, 4000), 200, np.float32)  # 12 MP of float: a float64 copy would be 96 MB
    gray = gray_from_array(big)
    assert gray.shape[0] * gray.shape[1] <= 4_000_000


def test_a_same_size_swap_with_its_mtime_restored_changes_the_resume_fingerprint(tmp_path):
    from datasets_prep.convert import input_fingerprint

    folder = tmp_path / "in"
    folder.mkdir()
    f = folder / "a.inkml"
    f.write_bytes(b"<ink>one</ink>")
    before_stat = f.stat()
    before = input_fingerprint([folder])
    assert input_fingerprint([folder]) == before  # stable while nothing changes
    f.write_bytes(b"<ink>two</ink>")  # same size
    os.utime(f, ns=(before_stat.st_atime_ns, before_stat.st_mtime_ns))
    assert f.stat().st_size == before_stat.st_size and f.stat().st_mtime_ns == before_stat.st_mtime_ns
    assert input_fingerprint([folder]) != before
