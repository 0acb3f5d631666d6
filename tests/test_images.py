"""Image datasets in (CoMER data.zip, TAMER images.pkl, HME100K, any folder) and shards out (export),
with every bad input accounted for and the round trip checked on real CROHME."""
from __future__ import annotations

import io
import json
import pickle
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from conftest import Payload
from datasets_prep.export import caption_tokens, export, export_names
from datasets_prep.export import main as export_main
from datasets_prep.images import convert, main
from datasets_prep.safe_pickle import PickleRefused, loads
from datasets_prep.shards import load_split, load_splits

SIZE = (64, 192)


def ink_image(seed: int, shape=(60, 160), white_on_black: bool = False) -> np.ndarray:
    """A few dark strokes on white (uint8), or the inverse."""
    rng = np.random.default_rng(seed)
    a = np.full(shape, 255, np.uint8)
    for _ in range(4):
        y = int(rng.integers(10, shape[0] - 10))
        x0 = int(rng.integers(5, shape[1] // 2))
        a[y - 2: y + 2, x0: x0 + int(rng.integers(20, shape[1] // 2))] = 0
    return 255 - a if white_on_black else a


def png(a: np.ndarray, mode: str = "L") -> bytes:
    buf = io.BytesIO()
    Image.fromarray(a).convert(mode).save(buf, format="PNG")
    return buf.getvalue()


def bmp(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(a).save(buf, format="BMP")
    return buf.getvalue()


def bomb_png(w: int = 20000, h: int = 20000) -> bytes:
    """A valid PNG header promising w x h pixels, with a tiny (truncated) body."""
    def chunk(kind, payload):
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00" * 1000)) + chunk(b"IEND", b""))


def comer_zip(path: Path, splits: dict[str, list[tuple[str, str, bytes]]], extra: dict[str, bytes] | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for split, rows in splits.items():
            zf.writestr(f"data/{split}/caption.txt", "".join(f"{n}\t{lab}\n" for n, lab, _ in rows))
            for n, _, data in rows:
                zf.writestr(f"data/{split}/img/{n}.bmp", data)
        for name, data in (extra or {}).items():
            zf.writestr(name, data)
    return path


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "quarantine.jsonl").read_text().splitlines() if line.strip()]


# ---------------------------------------------------------------- importers

def test_comer_zip_both_polarities_and_labels(tmp_path):
    rows = [(f"img{i}", "x ^ { 2 } + \\frac { 1 } { 2 }", bmp(ink_image(i, white_on_black=i % 2 == 0)))
            for i in range(6)]
    z = comer_zip(tmp_path / "data.zip", {"train": rows, "2014": rows[:2]})
    s = convert("comer", [z], tmp_path / "out", size=SIZE, workers=1)
    assert s["totals"]["rows"] == 8 and s["totals"]["quarantined"] == 0
    assert s["split_names"] == ["train", "2014"]
    t = load_split(tmp_path / "out" / "train")
    assert t.column("sample_id").to_pylist() == [f"img{i}" for i in range(6)]
    assert set(t.column("latex").to_pylist()) == {"x ^ { 2 } + \\frac { 1 } { 2 }"}
    assert t.column("label_error").to_pylist() == [None] * 6
    assert t.column("source").to_pylist() == ["comer"] * 6
    assert t.column("num_strokes").to_pylist() == [None] * 6
    for cell in t.column("image").to_pylist():  # black ink on white whatever the input's polarity
        a = np.asarray(Image.open(io.BytesIO(cell["bytes"])))
        assert a.shape == SIZE and np.median(a) == 255 and a.min() < 50


def test_comer_extracted_folder_and_a_single_split_folder(tmp_path):
    rows = [(f"n{i}", "a + b", bmp(ink_image(i))) for i in range(3)]
    with zipfile.ZipFile(comer_zip(tmp_path / "data.zip", {"2016": rows})) as zf:
        zf.extractall(tmp_path / "x")
    whole = convert("comer", [tmp_path / "x" / "data"], tmp_path / "o1", size=SIZE, workers=1)
    one = convert("comer", [tmp_path / "x" / "data" / "2016"], tmp_path / "o2", size=SIZE, workers=1)
    assert whole["split_names"] == one["split_names"] == ["2016"]
    assert whole["totals"]["rows"] == one["totals"]["rows"] == 3


@pytest.mark.parametrize("mode", ["1", "L", "LA", "RGBA", "RGB", "P", "JPEG"])
def test_folder_source_reads_every_image_mode(tmp_path, mode):
    d = tmp_path / "mine"
    d.mkdir()
    a = ink_image(3)
    if mode == "JPEG":
        im = Image.fromarray(a).convert("RGB")
        buf = io.BytesIO()
        im.save(buf, format="JPEG", quality=40)
        (d / "a.jpg").write_bytes(buf.getvalue())
    elif mode in ("LA", "RGBA"):  # ink in the alpha channel, transparent background
        rgba = np.zeros(a.shape + (4,), np.uint8)
        rgba[..., 3] = 255 - a
        Image.fromarray(rgba, "RGBA").convert(mode).save(d / "a.png")
    else:
        Image.fromarray(a).convert(mode).save(d / "a.png")
    (d / "labels.tsv").write_text(("a.jpg" if mode == "JPEG" else "a") + "\t\\alpha = 1\n")
    s = convert("folder", [d], tmp_path / "o", size=SIZE, workers=1, binarize=mode == "JPEG")
    assert s["totals"]["rows"] == 1, records(tmp_path / "o")
    assert s["split_names"] == ["mine"]
    img = np.asarray(Image.open(io.BytesIO(load_split(tmp_path / "o" / "mine").column("image")[0]["bytes"].as_py())))
    assert (img < 128).sum() > 100  # the strokes arrived


def test_folder_source_metadata_jsonl_and_split_files(tmp_path):
    d = tmp_path / "ds"
    (d / "imgs").mkdir(parents=True)
    for i in range(3):
        (d / "imgs" / f"{i}.png").write_bytes(png(ink_image(i)))
    (d / "metadata.jsonl").write_text("".join(json.dumps({"file_name": f"imgs/{i}.png", "text": f"x_{i}"}) + "\n"
                                              for i in range(2)))
    (d / "README.txt").write_text("not labels\n")
    s = convert("folder", [d], tmp_path / "o", size=SIZE, workers=1, split="test")
    assert s["totals"]["rows"] == 2
    [rec] = records(tmp_path / "o")
    assert rec["kind"] == "no-label" and rec["path"].endswith("imgs/2.png")


def test_hme100k_layout(tmp_path):
    root = tmp_path / "HME100K"
    for split, n in (("train", 3), ("test", 2)):
        (root / split / f"{split}_images").mkdir(parents=True)
        for i in range(n):
            (root / split / f"{split}_images" / f"{split}_{i}.jpg").write_bytes(png(ink_image(i), "RGB"))
        (root / split / f"{split}_labels.txt").write_text(
            "".join(f"{split}_{i}.jpg\t\\frac {{ 5 }} {{ 1 4 }} = 中\n" for i in range(n)), encoding="utf-8")
    s = convert("hme100k", [root], tmp_path / "o", size=SIZE, workers=1, binarize=True)
    assert s["split_names"] == ["train", "test"] and s["totals"]["rows"] == 5
    assert load_split(tmp_path / "o" / "test").column("sample_id").to_pylist() == ["test_0", "test_1"]


def test_tamer_pickle_layout(tmp_path):
    d = tmp_path / "crohme" / "2014"
    d.mkdir(parents=True)
    imgs = {f"e{i}": ink_image(i, white_on_black=True) for i in range(3)}
    (d / "images.pkl").write_bytes(pickle.dumps(imgs))
    (d / "caption.txt").write_text("".join(f"e{i}\t\\sqrt {{ {i} }}\n" for i in range(3)))
    s = convert("tamer", [tmp_path / "crohme"], tmp_path / "o", size=SIZE, workers=2)
    assert s["totals"]["rows"] == 3 and s["split_names"] == ["2014"]


# ---------------------------------------------------------------- bad input

def test_every_kind_of_bad_input_is_quarantined_by_name_and_nothing_else_is_lost(tmp_path):
    good = [(f"ok{i}", "a = b", bmp(ink_image(i))) for i in range(3)]
    full = png(ink_image(9))
    bad = [("zero", "x", b""), ("trunc", "x", full[: len(full) // 2]), ("bomb", "x", bomb_png()),
           ("text", "x", b"this is not an image\n")]
    z = comer_zip(tmp_path / "data.zip", {"train": good + bad}, extra={
        "data/train/img/orphan.bmp": bmp(ink_image(5)),                        # an image with no label
        "data/test/caption.txt": b"lonely\tx\nok\t\xff\xfe bad utf8\nok\ty\nok\tz\n",  # no image; bad line; dup
        "data/test/img/ok.bmp": bmp(ink_image(1)),
    })
    s = convert("comer", [z], tmp_path / "o", size=SIZE, workers=1)
    recs = {(r["path"].split(":")[-2] if r["path"].count(":") > 1 else r["path"], r["kind"]) for r in records(tmp_path / "o")}
    kinds = sorted(r["kind"] for r in records(tmp_path / "o"))
    assert s["splits"]["train"]["rows"] == 3 and s["splits"]["test"]["rows"] == 1
    assert kinds.count("bad-image") == 4, kinds
    assert {"no-label", "missing-image", "duplicate-name", "label-encoding"} <= set(kinds), kinds
    msgs = " ".join(r["error"] for r in records(tmp_path / "o"))
    for word in ("empty file", "truncated", "decompression bomb", "not an image", "is missing", "already labelled",
                 "invalid UTF-8"):
        assert word in msgs, (word, msgs)
    assert all("zero" in r["path"] or "trunc" in r["path"] or "bomb" in r["path"] or "text" in r["path"]
               for r in records(tmp_path / "o") if r["kind"] == "bad-image")
    assert recs  # every record names its file


def test_a_pickle_payload_never_runs_and_the_split_is_refused_by_name(tmp_path):
    marker = tmp_path / "pwned"
    d = tmp_path / "crohme" / "train"
    d.mkdir(parents=True)
    (d / "images.pkl").write_bytes(pickle.dumps({"a": Payload(str(marker))}))
    (d / "caption.txt").write_text("a\tx\n")
    ok = tmp_path / "crohme" / "2014"
    ok.mkdir()
    (ok / "images.pkl").write_bytes(pickle.dumps({"b": ink_image(2)}))
    (ok / "caption.txt").write_text("b\ty\n")
    s = convert("tamer", [tmp_path / "crohme"], tmp_path / "o", size=SIZE, workers=1)
    assert not marker.exists()
    assert s["splits"]["2014"]["rows"] == 1
    bad = [r for r in records(tmp_path / "o") if r["kind"] == "bad-pickle"]
    assert len(bad) == 1 and "posix.system" in bad[0]["error"] and bad[0]["path"].endswith("train/images.pkl")
    with pytest.raises(PickleRefused):
        loads(pickle.dumps(Payload(str(marker))))
    assert not marker.exists()


def test_cli_exit_codes_and_usage_errors(tmp_path, capsys):
    assert main(["--src", "comer", "--input", str(tmp_path / "nope.zip"), "--out", str(tmp_path / "o")]) == 2
    assert "input not found" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["--src", "folder", "--input", str(empty), "--out", str(tmp_path / "o2"), "--quiet"]) == 1
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--binarize" in out and "exit codes" in out and "hme100k" in out


# ---------------------------------------------------------------- export

@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="ab/ _-x.", min_size=1, max_size=8), min_size=1, max_size=12))
def test_export_names_are_unique_and_whitespace_free(ids):
    names = export_names(ids)
    assert len(names) == len(ids) and len(set(names)) == len(names)
    assert all(n and not any(c.isspace() for c in n) and "/" not in n for n in names)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(["x^2", "\\frac{a}{b}+c", "\\sqrt[3]{x}", "\\sin x", "a_{i}^{2}", "\\left(x\\right)",
                        "\\mbox{if}x", "\\{a\\}"]))
def test_caption_tokens_re_read_to_the_same_tokens(latex):
    from tokenizer import tokenize
    cap = caption_tokens(latex)
    assert [t for t in tokenize(cap) if t.strip()] == [t for t in tokenize(latex) if t.strip()]


def test_export_refuses_a_non_shard_folder_and_a_busy_out(tmp_path, capsys):
    assert export_main(["--to", "comer", "--data", str(tmp_path), "--out", str(tmp_path / "e")]) == 2
    assert "not a shard folder" in capsys.readouterr().err


def _round_trip(tmp_path: Path, inputs: list[Path], to: str, limit: int):
    from datasets_prep.inkml import convert as convert_ink
    from tokenizer import tokenize

    orig = tmp_path / "orig"
    convert_ink("crohme", inputs, orig, size=(96, 384), limit=limit, workers=2)
    export(orig, tmp_path / to, to)
    src = tmp_path / to / "data.zip" if to == "comer" else tmp_path / to
    back = tmp_path / "back"
    convert(to, [src], back, size=(96, 384), workers=2)
    a, b = load_splits(orig), load_splits(back)
    assert sorted(a) == sorted(b)
    for split in a:
        ids = a[split].column("sample_id").to_pylist()
        names = export_names(ids)
        by_name = {n: i for i, n in enumerate(b[split].column("sample_id").to_pylist())}
        assert sorted(by_name) == sorted(names)
        diffs = []
        for i, n in enumerate(names):
            j = by_name[n]
            la, lb = a[split].column("latex")[i].as_py(), b[split].column("latex")[j].as_py()
            assert [t for t in tokenize(la) if t.strip()] == [t for t in tokenize(lb) if t.strip()]
            ia = np.asarray(Image.open(io.BytesIO(a[split].column("image")[i]["bytes"].as_py())), np.float32)
            ib = np.asarray(Image.open(io.BytesIO(b[split].column("image")[j]["bytes"].as_py())), np.float32)
            diffs.append(np.abs(ia - ib).mean() / 255)
        # the re-import refits the crop (a resampling): equal up to interpolation along stroke edges
        assert np.mean(diffs) < 0.03 and max(diffs) < 0.08, (np.mean(diffs), max(diffs))


@pytest.mark.parametrize("to", ["comer", "tamer"])
def test_round_trip_on_real_crohme(shared_data, tmp_path, to):
    crohme = shared_data / "crohme"
    _round_trip(tmp_path, [crohme / "train", crohme / "test2014"], to, limit=60)


def test_bttr_layout_without_img_folder(tmp_path):
    d = tmp_path / "bttr" / "2019"
    d.mkdir(parents=True)
    for i in range(2):
        (d / f"f{i}.bmp").write_bytes(bmp(ink_image(i, white_on_black=True)))
    (d / "caption.txt").write_text("f0 x + 1\nf1 y - 2\n")  # space-separated, as CoMER splits on whitespace
    s = convert("comer", [tmp_path / "bttr"], tmp_path / "o", size=SIZE, workers=1)
    assert s["split_names"] == ["2019"] and s["totals"]["rows"] == 2
    assert load_split(tmp_path / "o" / "2019").column("latex").to_pylist() == ["x + 1", "y - 2"]


def test_tamer_hme100k_names_with_jpg_either_side(tmp_path):
    d = tmp_path / "hme100k" / "test"
    d.mkdir(parents=True)
    (d / "images.pkl").write_bytes(pickle.dumps({"test_1.jpg": ink_image(1), "test_2": ink_image(2)}))
    (d / "caption.txt").write_text("test_1.jpg\ta\ntest_2.jpg\tb\n")
    s = convert("tamer", [tmp_path / "hme100k"], tmp_path / "o", size=SIZE, workers=1)
    assert s["totals"]["rows"] == 2 and s["totals"]["quarantined"] == 0
    assert load_split(tmp_path / "o" / "test").column("sample_id").to_pylist() == ["test_1", "test_2"]


@pytest.mark.parametrize("binarize", [False, True])
def test_predict_builds_for_an_image_the_tensor_training_reads(tmp_path, binarize):
    """An image converted by datasets_prep.images and the same file given to train.predict (with the
    shards' settings, as the checkpoint carries them) reach the model as the same tensor."""
    from train.data import image_to_tensor
    from datasets_prep.render_spec import RenderSpec
    from train.predict import load_input

    d = tmp_path / "mine"
    d.mkdir()
    rgb = np.stack([ink_image(4)] * 3, -1)
    rgb[..., 0] = np.clip(rgb[..., 0].astype(int) + 30, 0, 255)  # a tinted, photo-like background
    Image.fromarray(rgb, "RGB").save(d / "a.png")
    (d / "labels.tsv").write_text("a\tx\n")
    convert("folder", [d], tmp_path / "o", size=SIZE, margin=5.0, workers=1, binarize=binarize)
    render = RenderSpec.from_shards(tmp_path / "o")
    assert render.margin == 5.0 and render.binarize is binarize and render.size == tuple(SIZE)
    shard = image_to_tensor(load_split(tmp_path / "o" / "mine").column("image")[0]["bytes"].as_py(), SIZE)
    got, _ = load_input(d / "a.png", render)
    assert float((got - shard).abs().max()) <= 1.0 / 255 + 1e-6


@pytest.mark.parametrize("name,count", [("hme100k_test.tsv", 24607), ("crohme2014_test_captions.txt", 986),
                                        ("crohme2014_train_captions.txt", 8835)])
def test_real_label_files_read_as_captions(shared_data, name, count):
    """The real HME100K and WAP/CoMER caption files, as the image sources read them: every line a
    (name, label), no line lost, non-ASCII characters (the CJK punctuation of HME100K) kept."""
    from datasets_prep.sources.pairing import caption_lines

    recs = list(caption_lines((shared_data / "latex" / name).read_bytes(), name))
    bad = [r for r in recs if not isinstance(r, tuple)]
    assert not bad and len(recs) == count
    assert len({r[0] for r in recs}) == count  # names are unique
    if name.startswith("hme100k"):
        assert any("\u3001" in r[1] or "\u3002" in r[1] for r in recs)


def test_image_runs_resume_and_preview_like_ink_runs(tmp_path):
    rows = [(f"r{i}", "x + y", bmp(ink_image(i))) for i in range(7)]
    z = comer_zip(tmp_path / "data.zip", {"train": rows})
    out = tmp_path / "o"
    first = convert("comer", [z], out, size=SIZE, workers=2, shard_size=2, preview=4)
    assert (out / "preview.png").is_file() and first["splits"]["train"]["shards"] == 4
    (out / ".progress" / "train" / "00002.json").unlink()  # as if killed before that shard was recorded
    again = convert("comer", [z], out, size=SIZE, workers=2, shard_size=2, resume=True)
    assert again["resumed_shards"] == 3 and again["processed_this_run"] == 2
    assert load_split(out / "train").column("sample_id").to_pylist() == [f"r{i}" for i in range(7)]


def test_export_leaves_out_a_damaged_row_and_lists_it(tmp_path):
    """A shard row whose PNG is damaged (or whose label does not tokenize) is left out of the export
    and listed in export.json; the other rows are written."""
    import pyarrow as pa

    from datasets_prep.shards import write_table

    rows = [(f"r{i}", "x", bmp(ink_image(i))) for i in range(3)]
    convert("comer", [comer_zip(tmp_path / "data.zip", {"train": rows})], tmp_path / "s", size=SIZE, workers=1)
    shard = next((tmp_path / "s" / "train").glob("data-*.arrow"))
    t = load_split(tmp_path / "s" / "train")
    images = t.column("image").to_pylist()
    images[1]["bytes"] = images[1]["bytes"][:40]
    latex = t.column("latex").to_pylist()
    latex[2] = "\\"
    t = t.set_column(t.schema.get_field_index("image"), "image", pa.array(images, t.schema.field("image").type))
    t = t.set_column(t.schema.get_field_index("latex"), "latex", pa.array(latex, pa.string()))
    write_table(t, shard)
    rep = export(tmp_path / "s", tmp_path / "e", "comer")
    assert rep["splits"]["train"]["written"] == 1
    reasons = sorted(r["reason"].split(":")[0] for r in rep["skipped"])
    assert reasons == ["image unreadable", "label does not tokenize"]


def test_an_image_outside_the_layout_is_reported_not_dropped(tmp_path):
    root = tmp_path / "HME100K"
    (root / "train_images").mkdir(parents=True)
    (root / "train_images" / "a.jpg").write_bytes(png(ink_image(1), "RGB"))
    (root / "train_labels.txt").write_text("a.jpg\tx\n")
    (root / "figures").mkdir()
    (root / "figures" / "overview.png").write_bytes(png(ink_image(2)))
    s = convert("hme100k", [root], tmp_path / "o", size=SIZE, workers=1)
    assert s["totals"]["rows"] == 1
    [rec] = records(tmp_path / "o")
    assert rec["kind"] == "unplaced-image" and rec["path"].endswith("figures/overview.png")
