"""datasets_prep.readers: every quirk of docs/formats.md, the InkML point grammar, and the real files."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datasets_prep.ink import Ink
from datasets_prep.readers import InkError, read_inkml
from datasets_prep.sources import target_label

NS = 'xmlns="http://www.w3.org/2003/InkML"'


def crohme_file(traces: list[str], truth: str | None = "$x^2$", channels=("X", "Y"), decl=False, crlf=False) -> bytes:
    tf = "".join(f'<channel name="{c}" type="decimal"/>' for c in channels) if channels else ""
    parts = ['<?xml version="1.0" encoding="UTF-8"?>' if decl else "", f"<ink {NS}>"]
    if channels:
        parts.append(f"<traceFormat>{tf}</traceFormat>")
    if truth is not None:
        parts.append(f'<annotation type="truth">{truth}</annotation>')
    parts.append('<annotation type="writer">w01</annotation>')
    parts += [f'<trace id="{i}">\n{t}\n</trace>' for i, t in enumerate(traces)]
    parts.append('<traceGroup xml:id="=_1"><annotation type="truth">x</annotation>'
                 '<traceView traceDataRef="0"/></traceGroup></ink>')
    text = "\n".join(parts)
    return (text.replace("\n", "\r\n") if crlf else text).encode()


def mathwriting_file(traces: list[str], label="x^2", normalized="x^{2}") -> bytes:
    ann = f'<annotation type="label">{label}</annotation>'
    if normalized is not None:
        ann += f'<annotation type="normalizedLabel">{normalized}</annotation>'
    ann += '<annotation type="sampleId">0123456789abcdef</annotation>'
    tf = ('<traceFormat><channel name="X" type="decimal" /><channel name="Y" type="decimal" />'
          '<channel name="T" type="decimal" units="ms" /></traceFormat>')
    tr = "".join(f'<trace id="{i}">{t}</trace>' for i, t in enumerate(traces))
    return f"<ink {NS}>{ann}{tf}{tr}</ink>".encode()


# ---------------------------------------------------------------- formats

def test_crohme_basic_two_channels_crlf_and_declaration():
    ink = read_inkml(crohme_file(["1 2, 3 4, 5 6", "7 8"], decl=True, crlf=True), "a.inkml")
    assert ink.num_strokes == 2 and ink.num_points == 4
    np.testing.assert_array_equal(ink.strokes[0], [[1, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(ink.strokes[1], [[7, 8]])
    assert ink.annotations["truth"] == "$x^2$" and ink.annotations["writer"] == "w01"


def test_mathwriting_xyt_entities_and_negative_coordinates():
    ink = read_inkml(mathwriting_file(["-1.5 2.25 0.0,3.0 -4.0 16.0", "5 6 9.0"], label="a&amp;b&gt;c",
                                      normalized="a&amp;b&gt;c"), "m.inkml")
    assert ink.strokes[0].shape == (2, 3)
    np.testing.assert_array_equal(ink.strokes[0], [[-1.5, 2.25, 0.0], [3.0, -4.0, 16.0]])
    assert target_label(ink, "mathwriting") == ("a&b>c", "a&b>c")


def test_mathwriting_symbols_fall_back_to_label():
    ink = read_inkml(mathwriting_file(["1 2 0,3 4 1"], label=r"\alpha", normalized=None), "s.inkml")
    assert target_label(ink, "mathwriting") == (r"\alpha", r"\alpha")


def test_declared_xyf_with_two_values_per_point():
    ink = read_inkml(crohme_file(["1 2, 3 4"], channels=("X", "Y", "F")), "f.inkml")
    np.testing.assert_array_equal(ink.strokes[0], [[1, 2], [3, 4]])


def test_missing_traceformat_and_mixed_int_float():
    ink = read_inkml(crohme_file(["1 2.5, 3.0 4", "0.125 7"], channels=()), "n.inkml")
    np.testing.assert_array_equal(np.concatenate(ink.strokes), [[1, 2.5], [3, 4], [0.125, 7]])


def test_channel_order_taken_from_names():
    ink = read_inkml(crohme_file(["1 2 100, 3 4 200"], channels=("T", "X", "Y")), "o.inkml")
    np.testing.assert_array_equal(ink.strokes[0], [[2, 100, 1], [4, 200, 3]])


def test_xml_id_values_that_are_not_ncnames_are_fine():
    data = crohme_file(["1 2, 3 4"]).replace(b'<trace id="0">', b'<trace id="0" xml:id="\\frac_1">')
    assert read_inkml(data, "x.inkml").num_points == 2


def test_unnamespaced_ink_is_accepted():
    data = crohme_file(["1 2, 3 4"]).replace(NS.encode(), b"")
    assert read_inkml(data, "bare.inkml").num_points == 2


def test_latin1_file_without_declaration_is_recovered():
    data = crohme_file(["1 2, 3 4"], truth="$a \\cdot b$").replace(b"</ink>", b"<!-- \xb7 --><x>\xb7</x></ink>")
    ink = read_inkml(data, "latin1.inkml")
    assert ink.num_points == 2 and ink.annotations["truth"] == "$a \\cdot b$"


def test_misspelt_annotation_type_attribute_is_kept():
    typo = b'<annotation typx="truth">$y$</annotation><trace '
    data = crohme_file(["1 2, 3 4"], truth=None).replace(b"<trace ", typo, 1)
    assert read_inkml(data, "typo.inkml").annotations["truth"] == "$y$"


def test_crohme_label_cleaning_uses_the_tokenizer():
    from tokenizer import clean_crohme_truth

    raw = "  $ \\frac { a } { b }\n $ "
    ink = read_inkml(crohme_file(["1 2, 3 4"], truth=raw), "c.inkml")
    latex, latex_raw = target_label(ink, "crohme")
    assert latex_raw == raw and latex == clean_crohme_truth(raw) and "$" not in latex


@pytest.mark.parametrize("truth", [None, "$ $"])
def test_missing_or_empty_label_is_a_label_error(truth):
    ink = read_inkml(crohme_file(["1 2, 3 4"], truth=truth), "nl.inkml")
    with pytest.raises(InkError) as e:
        target_label(ink, "crohme", "nl.inkml")
    assert e.value.stage == "label" and str(e.value).startswith("nl.inkml: label: ")


def test_inkml_difference_encoding_slow_path():
    # explicit, then first differences (') and second differences (") per channel, as InkML allows
    ink = read_inkml(crohme_file(["10 20, '1 '2, '1 '2, \"0 \"1"]), "d.inkml")
    np.testing.assert_array_equal(ink.strokes[0], [[10, 20], [11, 22], [12, 24], [13, 27]])


def test_signs_without_spaces_and_repeat_marker():
    ink = read_inkml(crohme_file(["1-2, 3 *"]), "s.inkml")
    np.testing.assert_array_equal(ink.strokes[0], [[1, -2], [3, -2]])


def test_empty_traces_are_skipped_and_trailing_commas_ignored():
    ink = read_inkml(crohme_file(["1 2, 3 4,", "", "5 6"]), "e.inkml")
    assert [len(s) for s in ink.strokes] == [2, 1]


def test_error_str_names_file_stage_and_message():
    e = InkError("dir/f.inkml", "traces", "no <trace> with points")
    assert str(e) == "dir/f.inkml: traces: no <trace> with points"
    assert e.record() == {"path": "dir/f.inkml", "stage": "traces", "kind": "traces", "error": "no <trace> with points"}


# ---------------------------------------------------------------- round trip (hypothesis)

coord = st.one_of(st.integers(-10**5, 10**5).map(float),
                  st.floats(-1e5, 1e5, allow_nan=False, allow_infinity=False, width=64))
stroke = st.lists(st.tuples(coord, coord), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(strokes=st.lists(stroke, min_size=1, max_size=6), style=st.sampled_from(["crohme", "mathwriting"]))
def test_written_points_read_back_exactly(strokes, style):
    """Any coordinates written as InkML (repr: shortest exact decimal) read back bit-exact."""
    if sum(len(s) for s in strokes) < 2:
        strokes = strokes + [[(0.0, 0.0)]]
    if style == "crohme":
        traces = [", ".join(f"{x!r} {y!r}" for x, y in s) for s in strokes]
        data = crohme_file(traces, crlf=True)
    else:
        traces = [",".join(f"{x!r} {y!r} {float(i)!r}" for i, (x, y) in enumerate(s)) for s in strokes]
        data = mathwriting_file(traces)
    ink = read_inkml(data, "h.inkml")
    assert ink.num_strokes == len(strokes)
    for got, want in zip(ink.strokes, strokes):
        np.testing.assert_array_equal(got[:, :2], np.array(want, dtype=np.float64))


# ---------------------------------------------------------------- real data and fixtures

def _all_inkml(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix.lower() == ".inkml")


@pytest.mark.realdata
def test_every_real_crohme_file_reads_or_fails_clearly(shared_data):
    files = _all_inkml(shared_data / "crohme")
    assert len(files) > 10_000
    failures, labels, widths = {}, 0, set()
    for p in files:
        try:
            ink = read_inkml(p.read_bytes(), str(p))
        except InkError as e:
            failures[p.name] = e
            continue
        widths.add(ink.strokes[0].shape[1])
        assert ink.num_points >= 2 and all(np.isfinite(s).all() for s in ink.strokes)
        try:
            latex, raw = target_label(ink, "crohme", str(p))
            labels += 1
            # (one HAMEX truth has a stray `$` inside; only the wrapping is removed)
            assert not latex.startswith("$") and not latex.endswith("$") and "\n" not in latex
            assert latex == latex.strip()
        except InkError as e:
            assert e.stage == "label" and "no_truth" in str(p)
    # the one published 0-byte file is the only unreadable one
    assert set(failures) == {"MfrDB3088.inkml"} and failures["MfrDB3088.inkml"].kind == "empty-file"
    assert widths == {2, 3}  # X Y, and X Y T for MfrDB
    assert labels == len(files) - 1 - 33


@pytest.mark.realdata
def test_every_real_mathwriting_file_reads(shared_data):
    files = _all_inkml(shared_data / "mathwriting")
    assert len(files) == 8
    for p in files:
        ink = read_inkml(p.read_bytes(), str(p))
        assert ink.strokes[0].shape[1] == 3
        latex, raw = target_label(ink, "mathwriting")
        assert latex == ink.annotations["normalizedLabel"].strip()
        assert "&amp;" not in latex and "&gt;" not in latex


@pytest.mark.realdata
def test_real_latin1_mfrdb_file_keeps_all_traces(shared_data):
    p = shared_data / "crohme/train/MfrDB/MfrDB0104.inkml"
    ink = read_inkml(p.read_bytes(), str(p))
    assert ink.num_strokes == p.read_bytes().count(b"<trace ")  # nothing cut at the bad byte


def test_bundled_fixtures_read(repo_root):
    files = _all_inkml(repo_root / "fixtures")
    if not files:
        pytest.skip("fixtures/ not generated (python -m datasets_prep.synth --fixtures)")
    for p in files:
        ink = read_inkml(p.read_bytes(), str(p))
        src = "crohme" if "crohme" in p.parts else "mathwriting"
        latex, _ = target_label(ink, src)
        assert latex and isinstance(ink, Ink)


def test_stray_latin1_byte_does_not_mangle_valid_utf8():
    data = crohme_file(["1 2, 3 4"], truth="$\u03b1 + \u2212 1$").replace(b"</ink>", b"<x>\xb7</x></ink>")
    ink = read_inkml(data, "mixed.inkml")
    assert ink.annotations["truth"] == "$\u03b1 + \u2212 1$" and ink.num_points == 2
