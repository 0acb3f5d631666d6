"""`--src im2latex`: IM2LATEX-100K's published layout (formula file + three lists + processed images)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from datasets_prep.images import convert, main
from datasets_prep.shards import load_split
from datasets_prep.sources.im2latex import im2latex_label
from tokenizer import tokenize

SIZE = (48, 192)
FORMULAS = [
    r"\frac { a } { b } + x ^ { 2 }",                      # 0
    r"\mathrm { d } s ^ { 2 } = \left( d x \right) ~ \; y",  # 1: im2markup spacing
    r"\widetilde { f } = 2 \pi | \theta | \ ",             # 2: a stripped trailing control space (below)
    r"x \\\ ",                                             # 3: x, a line break, and a lone '\'
    r"a _ { i } = b",                                      # 4
    "",                                                    # 5: empty
    r"x ^ { 2 } ^ { 3 }",                                  # 6: lexes, does not validate
    r"y = m x + c",                                        # 7
]


def formula_png(path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = np.full((40, 160), 255, np.uint8)
    for k in range(5):
        x = 10 + 28 * k
        a[10 + int(rng.integers(0, 8)):30, x:x + 3] = 0
    Image.fromarray(a).save(path)


def make_layout(root: Path, *, train=None, validate=None, test=None, extra_images=()) -> Path:
    """A tiny IM2LATEX-100K folder: formula i is rendered into image f<i>.png."""
    root.mkdir(parents=True)
    lines = [f.rstrip() for f in FORMULAS]  # im2markup's files have the lines stripped
    (root / "im2latex_formulas.norm.lst").write_text("\n".join(lines) + "\n")
    img = root / "formula_images_processed"
    img.mkdir()
    lists = {"train": train, "validate": validate, "test": test}
    for split, rows in lists.items():
        if rows is None:
            continue
        (root / f"im2latex_{split}_filter.lst").write_text("".join(f"{r}\n" for r in rows))
    for k in range(len(FORMULAS)):
        formula_png(img / f"f{k}.png", k)
    for name in extra_images:
        formula_png(img / name, 99)
    return root


def quarantine(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "quarantine.jsonl").read_text().splitlines()]


def test_rows_splits_and_labels(tmp_path):
    root = make_layout(tmp_path / "im2latex", train=["f0.png 0", "f1.png 1", "f2.png 2"],
                       validate=["f4.png 4"], test=["f7.png 7", "f6.png 6"])
    s = convert("im2latex", [root], tmp_path / "o", size=SIZE, workers=1)
    assert s["split_names"] == ["train", "valid", "test"]
    assert {k: v["rows"] for k, v in s["splits"].items()} == {"train": 3, "valid": 1, "test": 2}
    t = load_split(tmp_path / "o" / "train")
    assert t.column("sample_id").to_pylist() == ["f0", "f1", "f2"]
    assert t.column("path").to_pylist() == [f"formula_images_processed/f{k}.png" for k in range(3)]
    latex = t.column("latex").to_pylist()
    assert latex[1] == FORMULAS[1].strip()
    assert latex[2] == r"\widetilde { f } = 2 \pi | \theta |"      # the lone '\' dropped ...
    assert t.column("latex_raw").to_pylist()[2].endswith("| \\")  # ... and kept in latex_raw
    ann = [json.loads(a) for a in t.column("annotations").to_pylist()]
    assert ann[2]["dropped"] == "trailing control space" and "dropped" not in ann[0]
    assert ann[1]["label_at"] == "im2latex_formulas.norm.lst:2"  # index 1 is the second line
    assert t.column("label_error").to_pylist() == [None, None, None]
    test = load_split(tmp_path / "o" / "test")
    errors = dict(zip(test.column("sample_id").to_pylist(), test.column("label_error").to_pylist()))
    assert errors["f7"] is None and errors["f6"].startswith("double-script")  # kept, marked, as every source
    img = np.asarray(Image.open(__import__("io").BytesIO(t.column("image")[0].as_py()["bytes"])))
    assert img.shape == SIZE and img.min() < 60 and np.median(img) == 255


def test_bad_lines_missing_images_and_unreadable_formulas_are_quarantined(tmp_path):
    root = make_layout(tmp_path / "im2latex",
                       train=["f0.png 0", "f1.png", "f4.png x", "gone.png 4", "f7.png 99", "f3.png 3",
                              "f5.png 5", "f0.png 1", "", "f7 7"],
                       extra_images=["stray.png"])
    s = convert("im2latex", [root], tmp_path / "o", size=SIZE, workers=1)
    assert s["splits"]["train"]["rows"] == 2  # f0 and f7 (listed without its extension)
    by_kind: dict[str, list[dict]] = {}
    for r in quarantine(tmp_path / "o"):
        by_kind.setdefault(r["kind"], []).append(r)
    assert sorted(r["path"] for r in by_kind["bad-list-line"]) == ["im2latex_train_filter.lst:2",
                                                                   "im2latex_train_filter.lst:3"]
    assert by_kind["missing-image"][0]["path"] == "formula_images_processed/gone.png"
    assert "im2latex_train_filter.lst:4" in by_kind["missing-image"][0]["error"]
    assert by_kind["bad-formula-index"][0]["path"] == "im2latex_train_filter.lst:5"
    assert "99" in by_kind["bad-formula-index"][0]["error"]
    assert by_kind["duplicate-name"][0]["path"] == "im2latex_train_filter.lst:8"
    unreadable = by_kind["unreadable-label"][0]
    assert unreadable["path"] == "formula_images_processed/f3.png" and "trailing-backslash" in unreadable["error"]
    assert by_kind["no-label"][0]["path"] == "formula_images_processed/f5.png"
    unlisted = sorted(r["path"].rsplit("/", 1)[1] for r in by_kind["unlisted-image"])
    assert unlisted == ["f2.png", "f6.png", "stray.png"]  # f1/f4 are named by bad lines: reported there
    assert s["totals"]["inputs"] == s["totals"]["rows"] + s["totals"]["quarantined"]


def test_split_filter_does_not_report_other_splits_images(tmp_path):
    root = make_layout(tmp_path / "im2latex", train=["f0.png 0"], validate=["f1.png 1"], test=["f4.png 4"])
    s = convert("im2latex", [root], tmp_path / "o", size=SIZE, workers=1, splits=["test"])
    assert s["split_names"] == ["test"] and s["totals"]["quarantined"] == 0


def test_not_a_folder_and_no_lists(tmp_path, capsys):
    (tmp_path / "file.lst").write_text("x\n")
    assert main(["--src", "im2latex", "--input", str(tmp_path / "file.lst"), "--out", str(tmp_path / "o1"),
                 "--quiet"]) == 1
    root = tmp_path / "empty"
    root.mkdir()
    (root / "im2latex_formulas.norm.lst").write_text("x\n")
    assert main(["--src", "im2latex", "--input", str(root), "--out", str(tmp_path / "o2"), "--quiet"]) == 1
    kinds = [r["kind"] for r in quarantine(tmp_path / "o1") + quarantine(tmp_path / "o2")]
    assert kinds == ["not-a-dataset", "no-labels"]


@pytest.mark.parametrize("raw, latex, dropped", [
    (r"a + b \ ", r"a + b", "trailing control space"),
    ("a + b \\", "a + b", "trailing control space"),
    ("\\", "", "trailing control space"),
    ("a \\\\", "a \\\\", None),        # a line break, not a control space
    ("a\\", "a\\", None),              # compact: not im2markup's artefact, left for the lexer to refuse
    ("  x   ^ { 2 } ", "x ^ { 2 }", None),
])
def test_label_repair(raw, latex, dropped):
    assert im2latex_label(raw) == (latex, dropped)


def test_real_val_formulas_all_lex_after_the_repair(shared_data):
    lines = (shared_data / "latex" / "im2latex100k_val_norm.txt").read_bytes().split(b"\n")
    lines = [x.decode() for x in lines if x.strip()]
    repaired = 0
    for line in lines:
        latex, dropped = im2latex_label(line)
        repaired += dropped is not None
        tokenize(latex)  # raises on anything the lexer cannot read
    assert len(lines) == 8475 and repaired == 11


def test_resume_redoes_only_the_unfinished_shard(tmp_path):
    root = make_layout(tmp_path / "im2latex", train=["f0.png 0", "f1.png 1", "f4.png 4", "f7.png 7"])
    out = tmp_path / "o"
    first = convert("im2latex", [root], out, size=SIZE, workers=1, shard_size=1)
    assert first["splits"]["train"]["shards"] == 4
    (out / ".progress" / "train" / "00002.json").unlink()  # as if killed before that shard was recorded
    again = convert("im2latex", [root], out, size=SIZE, workers=1, shard_size=1, resume=True)
    assert again["resumed_shards"] == 3 and again["processed_this_run"] == 1
    assert load_split(out / "train").column("sample_id").to_pylist() == ["f0", "f1", "f4", "f7"]
    assert again["totals"]["quarantined"] == first["totals"]["quarantined"] == 4  # f2, f3, f5, f6 unlisted
