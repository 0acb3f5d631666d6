"""The synthesizer's files: InkML as MathWriting/CROHME write it, generate(), the CLI, the fixtures."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from datasets_prep.readers import read_inkml
from datasets_prep.sources import target_label
from datasets_prep.synth import SynthError, generate, synthesize
from datasets_prep.synth.__main__ import main
from datasets_prep.synth.bboxes import GlyphBank, place_glyph, rebuild, rebuild_all
from datasets_prep.synth.fixtures import SPLITS, regenerate
from datasets_prep.synth.inkml_write import mathwriting_inkml

NS = "{http://www.w3.org/2003/InkML}"
REPO = Path(__file__).resolve().parents[1]


def annotations(root) -> dict[str, str]:
    return {a.get("type"): a.text or "" for a in root.findall(f"{NS}annotation")}


def traces(root) -> list[np.ndarray]:
    out = []
    for t in root.findall(f"{NS}trace"):
        pts = [p.split() for p in t.text.strip().split(",")]
        out.append(np.array(pts, dtype=float))
    return out


# ---- MathWriting format ---------------------------------------------------------------------------
def test_mathwriting_file_layout(tmp_path):
    s = generate(3, tmp_path, seed=5, split="valid")
    assert s["written"] == 3 and s["skipped"] == []
    files = sorted((tmp_path / "valid").glob("*.inkml"))
    assert len(files) == 3
    for f in files:
        text = f.read_text()
        assert re.fullmatch(r"[0-9a-f]{16}\.inkml", f.name)
        assert text.startswith('<ink xmlns="http://www.w3.org/2003/InkML">\n')  # no XML declaration
        assert text.endswith("</ink>\n")
        root = ET.fromstring(text)
        kinds = [a.get("type") for a in root.findall(f"{NS}annotation")]
        assert kinds == ["label", "splitTagOriginal", "inkCreationMethod", "labelCreationMethod", "sampleId",
                         "normalizedLabel"]
        # annotations come before <traceFormat>, then the traces
        tags = [c.tag.replace(NS, "") for c in root]
        assert tags.index("traceFormat") == len(kinds) and set(tags[len(kinds) + 1:]) == {"trace"}
        chans = [(c.get("name"), c.get("units")) for c in root.find(f"{NS}traceFormat")]
        assert chans == [("X", None), ("Y", None), ("T", "ms")]
        ann = annotations(root)
        assert ann["sampleId"] == f.stem and ann["splitTagOriginal"] == "valid"
        assert ann["label"] == ann["normalizedLabel"]
        assert ann["inkCreationMethod"] == "boundingBoxes" and ann["labelCreationMethod"] == "synthetic"
        body = re.findall(r'<trace id="\d+">([^<]*)</trace>', text)
        assert all(re.fullmatch(r"-?\d+\.\d\d -?\d+\.\d\d \d+\.\d(,-?\d+\.\d\d -?\d+\.\d\d \d+\.\d)*", b)
                   for b in body)


def test_mathwriting_roundtrip_is_exact_and_entities_escaped():
    ink = synthesize(r"\begin{matrix}a&b\\c&d\end{matrix}>0", np.random.default_rng(1))
    text = mathwriting_inkml(ink, sample_id="0123456789abcdef", split="train", label=ink.annotations["label"])
    assert "&amp;" in text and "&gt;" in text
    root = ET.fromstring(text)
    assert annotations(root)["normalizedLabel"] == r"\begin{matrix}a&b\\ c&d\end{matrix}>0"  # normalize's spacing
    back = traces(root)
    assert len(back) == ink.num_strokes and all(np.array_equal(a, b) for a, b in zip(ink.strokes, back))


def test_project_reader_reads_synthetic_files(tmp_path):
    generate(4, tmp_path / "mw", seed=2)
    generate(4, tmp_path / "cr", seed=2, fmt="crohme")
    from tokenizer import detokenize, tokenize
    for fmt in ("mathwriting", "crohme"):
        for f in sorted((tmp_path / ("mw" if fmt == "mathwriting" else "cr") / "train").glob("*.inkml")):
            ink = read_inkml(f.read_bytes(), str(f))
            latex, _ = target_label(ink, fmt, str(f))
            root = ET.parse(f).getroot()
            if fmt == "mathwriting":
                assert latex == annotations(root)["normalizedLabel"]
                assert all(s.shape[1] == 3 for s in ink.strokes)
            else:
                truth = annotations(root)["truth"]
                assert detokenize(tokenize(latex)) == detokenize(tokenize(truth.strip("$")))


# ---- CROHME format ---------------------------------------------------------------------------------
def test_crohme_file_layout_and_segmentation(tmp_path):
    labels = [r"\frac{1}{x}+\sqrt{y}", r"\sin^{2}x+\cos^{2}x=1"]
    s = generate(0, tmp_path, labels=labels, seed=0, fmt="crohme", split="test")
    assert s["written"] == 2
    for f in sorted((tmp_path / "test").glob("*.inkml")):
        text = f.read_text()
        root = ET.fromstring(text)
        assert [c.get("name") for c in root.find(f"{NS}traceFormat")] == ["X", "Y"]
        ann = annotations(root)
        truth = ann["truth"]
        assert truth.startswith("$") and truth.endswith("$")
        assert truth in (r"$\frac { 1 } { x } + \sqrt { y }$", r"$\sin ^ { 2 } x + \cos ^ { 2 } x = 1$")
        trs = root.findall(f"{NS}trace")
        for t in trs:  # integer "x y, x y" points
            assert re.fullmatch(r"\s*-?\d+ -?\d+(, -?\d+ -?\d+)*\s*", t.text)
        seg = root.find(f"{NS}traceGroup")
        assert seg.find(f"{NS}annotation").text == "Segmentation"
        groups = seg.findall(f"{NS}traceGroup")
        refs = [int(v.get("traceDataRef")) for g in groups for v in g.findall(f"{NS}traceView")]
        assert sorted(refs) == list(range(len(trs)))  # every stroke in exactly one symbol
        names = [g.find(f"{NS}annotation").text for g in groups]
        if "frac" in truth:
            assert names == ["1", "-", "x", "+", "\\sqrt", "y"]
        else:
            assert names == ["\\sin", "2", "x", "+", "\\cos", "2", "x", "=", "1"]


# ---- generate() -------------------------------------------------------------------------------------
def test_generate_is_deterministic_and_extends(tmp_path):
    generate(6, tmp_path / "a", seed=9)
    generate(6, tmp_path / "b", seed=9)
    generate(3, tmp_path / "c", seed=9)
    a = {f.name: f.read_bytes() for f in (tmp_path / "a" / "train").iterdir()}
    b = {f.name: f.read_bytes() for f in (tmp_path / "b" / "train").iterdir()}
    c = {f.name: f.read_bytes() for f in (tmp_path / "c" / "train").iterdir()}
    assert a == b and set(c) < set(a) and all(a[k] == v for k, v in c.items())
    generate(6, tmp_path / "d", seed=10)
    assert not set(a) & {f.name for f in (tmp_path / "d" / "train").iterdir()}


def test_generate_skips_and_records_bad_labels(tmp_path):
    labels = ["x+1", r"\foo", "x^{1}^{2}", r"\frac{a}{b}"]
    s = generate(8, tmp_path, labels=labels, seed=0)
    assert s["written"] == 4
    assert [r["index"] for r in s["skipped"]] == [1, 2, 5, 6]
    lines = [json.loads(x) for x in (tmp_path / "train" / "synth_skipped.jsonl").read_text().splitlines()]
    assert [r["label"] for r in lines] == [r"\foo", "x^{1}^{2}", r"\foo", "x^{1}^{2}"]
    assert "unsupported command" in lines[0]["reason"] and "double-script" in lines[1]["reason"]
    s = generate(0, tmp_path, labels=["y"], seed=0)
    assert not (tmp_path / "train" / "synth_skipped.jsonl").exists()  # stale list removed


@pytest.mark.parametrize("kwargs, msg", [({"fmt": "png"}, "unknown format"), ({"labels": []}, "empty"),
                                         ({"split": "../x"}, "is not a plain name")])
def test_generate_rejects_bad_arguments(tmp_path, kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        generate(1, tmp_path, **kwargs)


# ---- CLI ----------------------------------------------------------------------------------------------
def test_cli_labels_file_with_names_and_exit_codes(tmp_path, capsys):
    lab = tmp_path / "labels.txt"
    lab.write_text("a\tx^2\n\nb\t\\frac12\n  \n\\sqrt{y}\r\n", encoding="utf-8")
    assert main(["--labels", str(lab), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    names = sorted((tmp_path / "o" / "train").glob("*.inkml"))
    got = sorted(annotations(ET.parse(f).getroot())["normalizedLabel"] for f in names)
    assert got == sorted(["x^{2}", r"\frac{1}{2}", r"\sqrt{y}"])
    bad = tmp_path / "bad.txt"
    bad.write_text("x\n\\foo\n", encoding="utf-8")
    assert main(["--labels", str(bad), "--out", str(tmp_path / "o2"), "--quiet"]) == 1
    assert "unsupported command \\foo" in capsys.readouterr().err
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"\xff\xfe\x00x")
    assert main(["--labels", str(binary), "--out", str(tmp_path / "o3")]) == 2
    assert "not UTF-8" in capsys.readouterr().err
    assert main(["--labels", str(tmp_path / "missing.txt")]) == 2
    assert main(["--count", "-1"]) == 2


def test_cli_help_and_usage_errors():
    run = [sys.executable, "-m", "datasets_prep.synth"]
    ok = subprocess.run(run + ["--help"], capture_output=True, text=True, cwd=REPO)
    assert ok.returncode == 0 and "--fixtures" in ok.stdout
    bad = subprocess.run(run + ["--format", "svg"], capture_output=True, text=True, cwd=REPO)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_cli_random_crohme(tmp_path, capsys):
    assert main(["--count", "5", "--out", str(tmp_path), "--format", "crohme", "--split", "test",
                 "--seed", "3", "--quiet", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["written"] == 5 and len(list((tmp_path / "test").glob("*.inkml"))) == 5


# ---- fixtures ------------------------------------------------------------------------------------------
def test_committed_fixtures_are_what_the_command_writes(tmp_path):
    summary = regenerate(tmp_path)
    assert summary["skipped"] == []
    fresh = {p.relative_to(tmp_path).as_posix(): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    committed_root = REPO / "fixtures"
    if not committed_root.is_dir():
        pytest.skip("fixtures/ not generated yet (run python -m datasets_prep.synth --fixtures)")
    committed = {p.relative_to(committed_root).as_posix(): p.read_bytes()
                 for p in committed_root.rglob("*") if p.is_file()}
    assert fresh == committed
    assert sum(map(len, fresh.values())) < 800_000
    for fmt, splits in SPLITS.items():
        for split, n in splits.items():
            assert len([k for k in fresh if k.startswith(f"{fmt}/{split}/") and k.endswith(".inkml")]) == n


# ---- the official rebuild from real glyphs ---------------------------------------------------------
def _glyph_source(tmp_path: Path, train_inks: list[Path]) -> Path:
    """symbols.jsonl + synthetic-bboxes.jsonl over the given train inks (first strokes as glyphs)."""
    root = tmp_path / "mw"
    (root / "train").mkdir(parents=True)
    symbols = []
    for k, src in enumerate(train_inks):
        (root / "train" / src.name).write_bytes(src.read_bytes())
        sid = src.stem
        symbols.append({"sourceSampleId": sid, "strokeIndices": [0], "label": "x" if k % 2 == 0 else "2"})
        symbols.append({"sourceSampleId": sid, "strokeIndices": [1, 2], "label": "+"})
    symbols.append({"sourceSampleId": "0000000000000000", "strokeIndices": [0], "label": "y"})  # missing ink
    symbols.append({"sourceSampleId": train_inks[0].stem, "strokeIndices": [999], "label": "z"})
    (root / "symbols.jsonl").write_text("\n".join(json.dumps(s) for s in symbols) + "\n")
    boxes = [
        {"label": "x^2+x", "normalizedLabel": "x^{2}+x", "bboxes": [
            {"token": "x", "xMin": 0, "yMin": 10, "xMax": 10, "yMax": 20},
            {"token": "2", "xMin": 11, "yMin": 4, "xMax": 15, "yMax": 10},
            {"token": "+", "xMin": 17, "yMin": 12, "xMax": 25, "yMax": 20},
            {"token": "x", "xMin": 27, "yMin": 10, "xMax": 37, "yMax": 20}]},
        {"label": "x+y", "normalizedLabel": "x+y", "bboxes": [
            {"token": "x", "xMin": 0, "yMin": 0, "xMax": 10, "yMax": 10},
            {"token": "y", "xMin": 12, "yMin": 0, "xMax": 20, "yMax": 10}]},
    ]
    (root / "synthetic-bboxes.jsonl").write_text("\n".join(json.dumps(b) for b in boxes) + "\n")
    return root


def _check_rebuild(tmp_path: Path, root: Path):
    s = rebuild_all(root, tmp_path / "out", seed=1)
    assert s["written"] == 1
    assert [r["label"] for r in s["skipped"]] == ["x+y"] and "no glyph for token 'y'" in s["skipped"][0]["reason"]
    assert len(s["glyph_problems"]) == 2  # the missing source ink and the out-of-range stroke
    (f,) = (tmp_path / "out" / "synthetic").glob("*.inkml")
    root_el = ET.parse(f).getroot()
    ann = annotations(root_el)
    assert ann["label"] == "x^2+x" and ann["normalizedLabel"] == "x^{2}+x"
    assert ann["inkCreationMethod"] == "boundingBoxes" and ann["splitTagOriginal"] == "synthetic"
    strokes = traces(root_el)
    assert len(strokes) == 1 + 1 + 2 + 1
    groups = [strokes[0:1], strokes[1:2], strokes[2:4], strokes[4:5]]
    boxes = [(0, 10, 10, 20), (11, 4, 15, 10), (17, 12, 25, 20), (27, 10, 37, 20)]
    for g, (x0, y0, x1, y1) in zip(groups, boxes):
        xy = np.concatenate(g)[:, :2]
        assert xy[:, 0].min() >= x0 - 0.01 and xy[:, 0].max() <= x1 + 0.01
        assert xy[:, 1].min() >= y0 - 0.01 and xy[:, 1].max() <= y1 + 0.01
        fills = (xy[:, 0].max() - xy[:, 0].min() >= (x1 - x0) - 0.02) or (xy[:, 1].max() - xy[:, 1].min()
                                                                           >= (y1 - y0) - 0.02)
        assert fills  # scaled to touch the box on one axis (aspect kept)
    return strokes


def test_official_rebuild_from_written_inks(tmp_path):
    generate(2, tmp_path / "src", labels=["a+b+c", "d+e+f"], seed=0)
    root = _glyph_source(tmp_path, sorted((tmp_path / "src" / "train").glob("*.inkml")))
    _check_rebuild(tmp_path, root)


def test_official_rebuild_from_real_train_inks(tmp_path, shared_data):
    srcs = sorted((shared_data / "mathwriting" / "train").glob("*.inkml"))
    root = _glyph_source(tmp_path, srcs)
    strokes = _check_rebuild(tmp_path, root)
    # glyph timestamps are the source ink's own (not re-timed), as official synthetic inks keep them
    source_times = set()
    for src in srcs:
        for t in traces(ET.parse(src).getroot()):
            source_times |= set(t[:, 2].tolist())
    assert all(set(s[:, 2].tolist()) <= source_times for s in strokes)


def test_place_glyph_degenerate_and_bad_records():
    bar = [np.array([[0.0, 5.0, 0.0], [10.0, 5.0, 8.0]])]
    (out,) = place_glyph(bar, (100, 50, 140, 50))
    assert out[:, 0].min() == 100 and out[:, 0].max() == 140 and np.all(out[:, 1] == 50)
    assert np.array_equal(out[:, 2], [0.0, 8.0])
    bank = GlyphBank(glyphs={"x": [[np.array([[0.0, 0.0], [1.0, 1.0]])]]})
    rng = np.random.default_rng(0)
    for rec, why in [({"label": "x"}, "no bboxes"), ({"bboxes": []}, "no label"),
                     ({"label": "x", "bboxes": [{"token": "x"}]}, "bad bbox"),
                     ({"label": "x", "bboxes": [{"token": "x", "xMin": 5, "yMin": 0, "xMax": 1, "yMax": 1}]},
                      "bad box")]:
        with pytest.raises(SynthError, match=why):
            rebuild(rec, bank, rng)


def test_rebuild_input_errors_name_the_file(tmp_path):
    from datasets_prep.synth.bboxes import BBoxInputError
    with pytest.raises(BBoxInputError, match="symbols.jsonl: not found"):
        rebuild_all(tmp_path, tmp_path / "o")
    (tmp_path / "symbols.jsonl").write_text("{not json\n")
    (tmp_path / "synthetic-bboxes.jsonl").write_text("")
    with pytest.raises(BBoxInputError, match=r"symbols.jsonl:1: not JSON"):
        rebuild_all(tmp_path, tmp_path / "o")
    assert main(["--bboxes", str(tmp_path), "--out", str(tmp_path / "o")]) == 2


def test_cli_official_rebuild(tmp_path, capsys):
    generate(2, tmp_path / "src", labels=["a+b+c", "d+e+f"], seed=0)
    root = _glyph_source(tmp_path, sorted((tmp_path / "src" / "train").glob("*.inkml")))
    code = main(["--bboxes", str(root), "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and "no glyph for token 'y'" in err and "glyph source problem" in err
    assert len(list((tmp_path / "o" / "synthetic").glob("*.inkml"))) == 1
    assert (tmp_path / "o" / "synthetic" / "synth_skipped.jsonl").is_file()
