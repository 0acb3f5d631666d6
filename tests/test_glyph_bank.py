"""Glyph bank (synth/bank*.py) and real-hand synthesis (synth/handwriting.py, bank_synth.py,
bank_shards.py) on small InkML files the tests write; real CROHME at the end (skipped without it)."""
from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datasets_prep.synth.bank import Bank, BankError
from datasets_prep.synth.bank import main as bank_main
from datasets_prep.synth.bank_build import build_bank, writer_of
from datasets_prep.synth.bank_synth import generate_hand
from datasets_prep.synth.handwriting import HandBank, synthesize_hand
from datasets_prep.synth.leakage import ExcludeSet, label_key
from datasets_prep.synth.segments import read_segmented, symbol_token
from datasets_prep.synth.testsplit import TestSplitError

NS = "http://www.w3.org/2003/InkML"


def inkml(strokes: list[list[tuple[float, float]]], symbols: list[tuple[str, list[str]]], *, writer: str | None = None,
          ui: str | None = None, copyright: str | None = None, truth: str = "$x$") -> str:
    """A CROHME-style file: traces with ids "0".."n-1" (or as given in symbols' refs) + a segmentation."""
    ann = [f'<annotation type="truth">{truth}</annotation>']
    for key, val in (("writer", writer), ("UI", ui), ("copyright", copyright)):
        if val is not None:
            ann.append(f'<annotation type="{key}">{val}</annotation>')
    traces = [f'<trace id="{i}">{", ".join(f"{x} {y}" for x, y in s)}</trace>' for i, s in enumerate(strokes)]
    groups = []
    for k, (lab, refs) in enumerate(symbols):
        views = "".join(f'<traceView traceDataRef="{r}"/>' for r in refs)
        groups.append(f'<traceGroup xml:id="g{k}"><annotation type="truth">{lab}</annotation>{views}</traceGroup>')
    seg = f'<traceGroup xml:id="seg"><annotation type="truth">Segmentation</annotation>{"".join(groups)}</traceGroup>'
    return (f'<ink xmlns="{NS}"><traceFormat><channel name="X" type="decimal"/><channel name="Y" type="decimal"/>'
            f'</traceFormat>{"".join(ann)}{"".join(traces)}{seg}</ink>')


# An 'x' written in three strokes (Hershey's has two), a '<' spelled \lt, a comma spelled COMMA, a
# symbol label that is two tokens, and a group that refers to a trace the file lacks.
X3 = [[(0, 0), (10, 10)], [(10, 0), (5, 5)], [(5, 5), (0, 10)]]
LT = [[(30, 0), (20, 5), (30, 10)]]
COMMA = [[(40, 8), (39, 12)]]
AB = [[(50, 0), (52, 10)]]


def write_bank_inputs(root: Path) -> Path:
    d = root / "train" / "setA"
    d.mkdir(parents=True)
    (d / "a1.inkml").write_text(inkml(X3 + LT + COMMA + AB, [("x", ["0", "1", "2"]), ("\\lt", ["3"]),
                                                              ("COMMA", ["4"]), ("ab", ["5"]), ("y", ["99"])],
                                      writer="w1"))
    # a second writer, whose x is a small one-stroke one, 40 units tall and 20 wide
    (d / "b1.inkml").write_text(inkml([[(0, 0), (20, 40)]], [("x", ["0"])], writer="w2"))
    (d / "empty.inkml").write_bytes(b"")
    return root / "train"


def test_segmentation_reads_groups_and_drops_bad_ones(tmp_path):
    data = inkml(X3 + LT, [("x", ["0", "1", "2"]), ("\\lt", ["3"]), ("y", ["7"])]).encode()
    seg = read_segmented(data, "f.inkml")
    assert seg.symbols == [("x", (0, 1, 2)), ("\\lt", (3,))]
    assert len(seg.problems) == 1 and "missing trace" in seg.problems[0] and "'y'" in seg.problems[0]


@pytest.mark.parametrize("label,token", [("\\lt", "<"), ("\\gt", ">"), ("COMMA", ","), ("\\sin", "\\sin"),
                                         ("\\le", "\\leq"), ("\\frac", "-"), ("x", "x"), ("$\\alpha$", "\\alpha"),
                                         ("ab", None), ("", None), ("{", None)])
def test_symbol_labels_map_to_tokenizer_tokens(label, token):
    assert symbol_token(label) == token


def test_bank_entries_boxes_and_writers(tmp_path):
    bank, rep = build_bank("crohme", [write_bank_inputs(tmp_path)])
    assert sorted(bank.symbols) == sorted(["x", "<", ","])
    by = bank.by_symbol()
    assert len(by["x"]) == 2 and len(by["<"]) == 1 and len(by[","]) == 1
    assert rep["unmapped"] == {"ab": 1}
    assert rep["symbols_dropped"] == 1 and rep["files_skipped"] == 1
    assert rep["files_skipped_by_kind"] == {"empty-file": 1}
    # normalized to the box: top-left at 0, longer side 1, aspect kept
    for g in range(bank.num_samples):
        xy = np.concatenate(bank.sample_strokes(g))
        assert np.allclose(xy.min(axis=0), 0.0, atol=1e-3)
        assert abs(xy.max(axis=0).max() - 1.0) < 1e-3
    w2 = [g for g in by["x"] if bank.writers[bank.arrays["sample_writer"][g]] == "setA/w2"]
    assert len(w2) == 1
    assert np.allclose(bank.arrays["sample_size"][w2[0]], [0.5, 1.0], atol=1e-3)
    assert sorted(bank.writers) == ["setA/w1", "setA/w2"]
    assert [len(bank.sample_strokes(g)) for g in by["x"]] == [3, 1]
    assert bank.files[bank.arrays["sample_file"][by["<"][0]]].endswith("a1.inkml")


def test_writer_without_annotation_comes_from_the_file_name():
    assert writer_of({}, "MathBrush/2009210-947-12.inkml") == "MathBrush/2009210-947"
    assert writer_of({"writer": " User001 "}, "train/MfrDB/MfrDB0001.inkml") == "MfrDB/User001"


def test_bank_save_load_roundtrip_and_refusals(tmp_path):
    bank, _ = build_bank("crohme", [write_bank_inputs(tmp_path)])
    bank.save(tmp_path / "bank")
    back = Bank.load(tmp_path / "bank")
    assert back.symbols == bank.symbols and back.writers == bank.writers
    for k, v in bank.arrays.items():
        assert np.array_equal(back.arrays[k], v.astype(back.arrays[k].dtype), equal_nan=True), k
    # an object array (a pickle inside the npz) is refused, not loaded
    z = dict(np.load(tmp_path / "bank" / "glyphs.npz"))
    z["sample_symbol"] = np.array([object()] * len(z["sample_symbol"]), dtype=object)
    np.savez(tmp_path / "bank" / "glyphs.npz", **z)
    with pytest.raises(BankError, match="glyphs.npz"):
        Bank.load(tmp_path / "bank")
    with pytest.raises(BankError, match="index.json: not found"):
        Bank.load(tmp_path / "nowhere")


def test_damaged_offsets_are_refused(tmp_path):
    bank, _ = build_bank("crohme", [write_bank_inputs(tmp_path)])
    bank.arrays["stroke_starts"][-1] += 5
    bank.save(tmp_path / "bank")
    with pytest.raises(BankError, match="stroke_starts"):
        Bank.load(tmp_path / "bank")


def test_cli_writes_bank_and_report(tmp_path, capsys):
    src = write_bank_inputs(tmp_path)
    code = bank_main(["--input", str(src), "--out", str(tmp_path / "bank"), "--quiet"])
    assert code == 1  # built, but one file skipped
    rep = json.loads((tmp_path / "bank" / "coverage.json").read_text())
    assert rep["symbols"] == 3 and rep["samples"] == 4 and rep["writers"] == 2
    assert rep["per_symbol"]["x"] == {"samples": 2, "writers": 2}
    assert "3 symbols, 4 samples, 2 writers" in capsys.readouterr().out


# ---- test splits -----------------------------------------------------------------------------------
def test_test_folder_is_refused_unless_allowed(tmp_path, capsys):
    d = tmp_path / "test2014"
    d.mkdir()
    (d / "a.inkml").write_text(inkml(X3, [("x", ["0", "1", "2"])]))
    with pytest.raises(TestSplitError, match="test2014"):
        build_bank("crohme", [d])
    assert bank_main(["--input", str(d), "--out", str(tmp_path / "b"), "--quiet"]) == 2
    assert "looks like a test split" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()
    bank, _ = build_bank("crohme", [d], allow_test=True)
    assert bank.num_samples == 1


@pytest.mark.parametrize("name,ann", [("RIT_2014_12.inkml", {}), ("UN_101_em_3.inkml", {}),
                                      ("18_em_0.inkml", {"ui": "ISICAL_2014_F18_E0"}),
                                      ("x.inkml", {"copyright": "IVC_2014"}),
                                      ("y.inkml", {"ui": "CROHME_2016_em_7"})])
def test_crohme_test_files_are_refused_in_any_folder(tmp_path, name, ann):
    d = tmp_path / "mytrain"
    d.mkdir()
    (d / "ok.inkml").write_text(inkml(X3, [("x", ["0", "1", "2"])], writer="w"))
    (d / name).write_text(inkml(X3, [("x", ["0", "1", "2"])], **ann))
    with pytest.raises(TestSplitError, match=name.replace(".", r"\.")):
        build_bank("crohme", [d])
    assert build_bank("crohme", [d], allow_test=True)[0].num_samples == 2


def test_training_extension_files_are_not_mistaken_for_test(tmp_path):
    d = tmp_path / "extension"
    d.mkdir()  # CROHME 2013's training extension shares the N_em_M names of the 2014 test files
    (d / "10_em_81.inkml").write_text(inkml(X3, [("x", ["0", "1", "2"])], ui="2013_IVC_CROHME_F10_E81",
                                            copyright="LUNAM/IRCCyN"))
    assert build_bank("crohme", [d])[0].num_samples == 1


# ---- synthesis -------------------------------------------------------------------------------------
@pytest.fixture()
def bank_dir(tmp_path) -> Path:
    bank, _ = build_bank("crohme", [write_bank_inputs(tmp_path)])
    bank.save(tmp_path / "bank")
    return tmp_path / "bank"


def _symbol_strokes(ink) -> dict[int, int]:
    sids = [int(v) for v in ink.annotations["strokeSymbols"].split()]
    return {s: sids.count(s) for s in set(sids)}


def test_synthesis_uses_bank_glyphs_and_counts_hershey_fallbacks(bank_dir):
    hb = HandBank.load(bank_dir)
    for seed in range(20):
        ink = synthesize_hand("x+x<x", np.random.default_rng(seed), hb)
        labels = ink.annotations["symbolLabels"].split("\t")
        assert labels == ["x", "+", "x", "<", "x"]
        per = _symbol_strokes(ink)
        # every x is a bank x: the 3-stroke one (w1) or the 1-stroke one (w2); Hershey's has 2 strokes
        assert all(per[i] in (1, 3) for i, lab in enumerate(labels) if lab == "x")
        assert per[3] == 1  # the bank's '<' (one stroke, as Hershey's; see the counts below)
        assert ink.annotations["hersheySymbols"] == "+"  # no '+' in the bank: the font's, counted
        same, other, hershey = map(int, ink.annotations["bankGlyphs"].split())
        assert (same + other, hershey) == (4, 1)
        # one writer per expression: w2 has only x, so with w2 the '<' comes from another writer
        assert other == (1 if ink.annotations["writer"] == "setA/w2" else 0)


def test_one_writer_per_expression_where_the_writer_has_the_symbol(bank_dir):
    hb = HandBank.load(bank_dir)
    for seed in range(20):
        ink = synthesize_hand("x x x x", np.random.default_rng(seed), hb)
        counts = {c for s, c in _symbol_strokes(ink).items()}
        assert counts == ({3} if ink.annotations["writer"] == "setA/w1" else {1})


def test_generate_excludes_test_labels_and_reports_them(bank_dir, tmp_path):
    ex = ExcludeSet(["x ^ { 2 }"])
    labels = ["x^2", "x+x", "x^{2}", "x<x"]
    rep = generate_hand(0, tmp_path / "out", bank_dir, labels=labels, exclude=ex)
    assert rep["excluded"] == 2 and rep["excluded_distinct"] == 2 and not rep["excluded_kept"]
    assert rep["written"] == 2
    texts = [p.read_text() for p in (tmp_path / "out" / "train").glob("*.inkml")]
    assert len(texts) == 2 and not any("x^{2}" in t for t in texts)
    saved = json.loads((tmp_path / "out" / "train" / "synth_report.json").read_text())
    assert saved["excluded"] == 2 and saved["glyphs"]["hershey"] == 1  # the '+' of x+x
    kept = generate_hand(0, tmp_path / "out2", bank_dir, labels=labels, exclude=ex, keep_excluded=True)
    assert kept["written"] == 4 and kept["excluded"] == 2


def test_random_labels_are_redrawn_when_excluded(bank_dir, tmp_path):
    from datasets_prep.synth.labels import random_label

    first = [random_label(np.random.default_rng([0, 0, i, 2])) for i in range(3)]
    rep = generate_hand(3, tmp_path / "o", bank_dir, exclude=ExcludeSet(first))
    assert rep["excluded"] >= 3 and rep["written"] == 3


def test_cli_with_bank_and_exclude(bank_dir, tmp_path, capsys):
    from datasets_prep.synth.__main__ import main

    (tmp_path / "labels.txt").write_text("x+x\nx<x\nx^{2}\n")
    (tmp_path / "test_captions.txt").write_text("18_em_0\tx ^ { 2 }\n")
    code = main(["--bank", str(bank_dir), "--labels", str(tmp_path / "labels.txt"), "--count", "4", "--out",
                 str(tmp_path / "o"), "--exclude", str(tmp_path / "test_captions.txt"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "1 label draw(s) equal to one of 1 --exclude labels excluded" in out
    assert len(list((tmp_path / "o" / "train").glob("*.inkml"))) == 4
    assert main(["--bank", str(tmp_path / "nobank"), "--count", "1", "--out", str(tmp_path / "o2"), "--quiet"]) == 2


def test_written_inks_convert(bank_dir, tmp_path):
    from datasets_prep.convert import convert
    from datasets_prep.shards import load_split

    generate_hand(5, tmp_path / "ink", bank_dir, labels=["x+x", "x<x", "\\frac{x}{x}"], fmt="crohme")
    generate_hand(5, tmp_path / "mw", bank_dir, labels=["x+x", "x<x", "\\frac{x}{x}"])
    for src, d in (("crohme", tmp_path / "ink" / "train"), ("mathwriting", tmp_path / "mw")):
        s = convert(src, [d], tmp_path / f"shards_{src}", size=(32, 128), workers=1)
        table = load_split(tmp_path / f"shards_{src}" / "train")
        assert table.num_rows == 5, s
        assert {label_key(t) for t in table.column("latex").to_pylist()} == {"x + x", "x < x",
                                                                             "\\frac { x } { x }"}


def test_bank_shards_caches_by_inputs(bank_dir, tmp_path):
    from datasets_prep.shards import load_split
    from datasets_prep.synth import bank_shards

    kw = dict(size=(32, 128), seed=3, exclude=["x^{2}"])
    a = bank_shards(bank_dir, ["x+x", "x^2", "x<x"], 6, tmp_path / "cache", **kw)
    table = load_split(a / "train")
    assert table.num_rows == 6 and "x^{2}" not in table.column("latex").to_pylist()
    report = json.loads((a.parent / "bank_shards.json").read_text())
    assert report["synth"]["excluded"] == 1
    stamp = (a / "train").stat().st_mtime_ns
    assert bank_shards(bank_dir, ["x+x", "x^2", "x<x"], 6, tmp_path / "cache", **kw) == a
    assert (a / "train").stat().st_mtime_ns == stamp  # reused, not rewritten
    b = bank_shards(bank_dir, ["x+x", "x^2", "x<x"], 6, tmp_path / "cache", **{**kw, "seed": 4})
    assert b != a and load_split(b / "train").num_rows == 6
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == sorted([a.parent.name, b.parent.name])


# ---- properties ------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["x^2", "\\frac{a}{b}", "\\sqrt{x}+1", "a_{i}^{2}", "x\\le y", "\\sin x"]), st.data())
def test_exclusion_ignores_spelling_and_spacing(label, data):
    from tokenizer import normalize, tokenize

    toks = tokenize(normalize(label))
    sep = data.draw(st.sampled_from([" ", "  ", " \t"]))
    respelled = sep.join(toks)
    assert label_key(respelled) == label_key(label)
    assert respelled in ExcludeSet([label])
    assert (label + "+1") not in ExcludeSet([label])


# ---- real data -------------------------------------------------------------------------------------
def test_real_crohme_train_files(shared_data, tmp_path):
    train = shared_data / "crohme" / "train"
    picked = tmp_path / "few"
    for sub in ("HAMEX", "MathBrush", "MfrDB", "KAIST"):
        (picked / sub).mkdir(parents=True)
        for f in sorted((train / sub).glob("*.inkml"))[:8]:
            (picked / sub / f.name).write_bytes(f.read_bytes())
    bank, rep = build_bank("crohme", [picked])
    assert rep["files_used"] == 32 and rep["unmapped"] == {} and rep["symbols_dropped"] == 0
    assert bank.num_samples > 150 and len(bank.writers) >= 4
    assert all(w.split("/")[0] in ("HAMEX", "MathBrush", "MfrDB", "KAIST") for w in bank.writers)
    from datasets_prep.synth.recombine import _GLYPHS
    assert set(bank.symbols) <= _GLYPHS  # every key a token the layout draws
    bank.save(tmp_path / "bank")
    hb = HandBank.load(tmp_path / "bank")
    caps = [ln.split("\t", 1)[1] for ln in
            (shared_data / "latex" / "crohme2014_train_captions.txt").read_text().splitlines()[:40]]
    rep = generate_hand(0, tmp_path / "o", hb, labels=caps)
    assert rep["written"] == 40 and rep["skipped"] == []
    assert rep["bank_glyph_share"] > 0.7, rep["glyphs"]


def test_real_crohme_test_split_is_refused(shared_data, tmp_path):
    with pytest.raises(TestSplitError):
        build_bank("crohme", [shared_data / "crohme" / "test2014"])
    one = tmp_path / "train_copy"
    one.mkdir()
    f = next((shared_data / "crohme" / "test2016").glob("*.inkml"))
    (one / "renamed.inkml").write_bytes(f.read_bytes())
    with pytest.raises(TestSplitError, match="CROHME_2016"):
        build_bank("crohme", [one])


def test_mathwriting_symbols_jsonl(tmp_path):
    """MathWriting's symbols.jsonl: a glyph is some strokes of a train ink (no writer ids there)."""
    root = tmp_path / "mw"
    (root / "train").mkdir(parents=True)
    ink = (f'<ink xmlns="{NS}"><annotation type="label">x+1</annotation><traceFormat><channel name="X"/>'
           '<channel name="Y"/><channel name="T"/></traceFormat><trace>0 0 0,10 10 1</trace>'
           '<trace>10 0 2,0 10 3</trace><trace>20 5 4,30 5 5</trace></ink>')
    (root / "train" / "00000000000000aa.inkml").write_text(ink)
    lines = [{"sourceSampleId": "00000000000000aa", "strokeIndices": [0, 1], "label": "x"},
             {"sourceSampleId": "00000000000000aa", "strokeIndices": [2], "label": "-"},
             {"sourceSampleId": "00000000000000ab", "strokeIndices": [0], "label": "y"}]
    (root / "symbols.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    bank, rep = build_bank("mathwriting", [root])
    assert sorted(bank.symbols) == ["-", "x"] and rep["files_skipped"] == 1
    assert bank.writers == ["mathwriting/00000000000000aa"]


def test_report_text_mentions_fallbacks(bank_dir, tmp_path):
    from datasets_prep.synth.bank_synth import print_report

    rep = generate_hand(0, tmp_path / "o", bank_dir, labels=["x+x"])
    buf = io.StringIO()
    print_report(rep, buf)
    assert "Hershey fallbacks by symbol: + 1" in buf.getvalue()


@pytest.mark.parametrize("label,stroke", [("l", [(0, 0), (1, 30)]), ("1", [(0, 5), (4, 0), (4, 30)]),
                                          ("x", [(0, 0), (12, 10)]), ("-", [(0, 0), (20, 1)])])
def test_samples_are_fitted_to_the_size_of_the_glyph_they_replace(tmp_path, label, stroke):
    from datasets_prep.synth import glyphs as G

    d = tmp_path / "t"
    d.mkdir()
    (d / "a.inkml").write_text(inkml([stroke], [(label, ["0"])], writer="w"))
    bank, _ = build_bank("crohme", [d])
    pts, _, _ = HandBank(bank).fitted(0, label)
    ref = G.template(label)
    if label == "-":  # flat: fitted by width
        assert np.ptp(pts[:, 0]) == pytest.approx(np.ptp(ref.points[:, 0]), rel=0.02)
    else:  # by height, and centred where the font's glyph is
        assert np.ptp(pts[:, 1]) == pytest.approx(ref.bottom - ref.top, rel=0.02)
        assert pts[:, 1].mean() == pytest.approx((ref.top + ref.bottom) / 2, abs=0.15)


_sym = st.sampled_from(["x", "<", "\\alpha", "2", "-", "\\sqrt"])
_stroke = st.lists(st.tuples(st.integers(-500, 500), st.integers(-500, 500)), min_size=1, max_size=8)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.lists(st.tuples(_sym, st.lists(_stroke, min_size=1, max_size=3)), min_size=1,
                                   max_size=4), st.sampled_from(["w1", "w2", "w3"])), min_size=1, max_size=4))
def test_bank_save_load_is_a_round_trip(tmp_path_factory, inks):
    """Whatever symbols, strokes and writers go in, load(save(bank)) gives the same samples, in box units."""
    from datasets_prep.synth.bank_build import _Collector

    col = _Collector()
    for k, (symbols, writer) in enumerate(inks):
        col.add_ink([(s, [np.array(p, dtype=np.float64) for p in strokes]) for s, strokes in symbols],
                    f"d/{writer}", f"f{k}.inkml")
    bank = col.bank({})
    d = tmp_path_factory.mktemp("bank")
    bank.save(d)
    back = Bank.load(d)
    assert back.num_samples == sum(len(s) for s, _ in inks)
    for g in range(back.num_samples):
        a, b = bank.sample_strokes(g), back.sample_strokes(g)
        assert [len(s) for s in a] == [len(s) for s in b]
        xy = np.concatenate(b)
        assert xy.min() >= -1e-3 and xy.max() <= 1 + 1e-3  # normalized to the box
    assert [back.writers[w] for w in back.arrays["sample_writer"]] == \
        [f"d/{w}" for s, w in inks for _ in s]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["x+1=y", "\\frac{a+b}{c}-d", "(a+b)^{2}=a^{2}+2ab+b^{2}", "f(x)\\leq g(x)+1"]),
       st.sampled_from(["y-2", "\\sqrt{x+1}+3=z", "a_{i+1}-a_{i}", "e^{x+y}>0"]), st.integers(0, 10_000))
def test_recombined_labels_cut_at_top_level_and_parse(a, b, seed):
    from datasets_prep.synth.latex import parse_label
    from datasets_prep.synth.recombine import recombine

    lab = recombine(a, b, np.random.default_rng(seed))
    assert lab is not None
    parse_label(lab)  # raises SynthError if the cut broke a group
    toks = lab.split()
    assert toks.count("{") == toks.count("}") and toks.count("(") == toks.count(")")
