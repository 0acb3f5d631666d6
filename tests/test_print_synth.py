"""Printed formulas: the layout-engine renderer (synth/printed.py), the TeX renderer's error path,
the set writer (synth/print_set.py, the `folder` layout) and `--style print` on the command line."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from datasets_prep.images import convert
from datasets_prep.render import rasterize_at
from datasets_prep.shards import load_split
from datasets_prep.synth import SynthError
from datasets_prep.synth.__main__ import main as synth_main
from datasets_prep.synth.print_set import write_printed
from datasets_prep.synth.printed import PrintStyle, drawable, print_ink, render_print
from datasets_prep.synth.tex import DEBIAN_PACKAGES, TexUnavailable, check_tex, render_tex
from tokenizer import tokenize
from tokenizer.markup_metrics import image_exact_match, markup_scores

from builders import needs_tex


def ink_rows(img: np.ndarray) -> tuple[int, int]:
    rows = np.flatnonzero((img < 128).any(axis=1))
    return int(rows[0]), int(rows[-1])


def test_render_is_deterministic_black_on_white_and_cut_to_the_ink():
    a = render_print(r"\frac { a } { b } + x ^ { 2 }")
    b = render_print(r"\frac { a } { b } + x ^ { 2 }")
    assert a.dtype == np.uint8 and a.ndim == 2 and np.array_equal(a, b)
    assert a.min() == 0 and np.median(a) == 255
    m = int(PrintStyle().margin)
    assert (a[:m] == 255).all() and (a[-m:] == 255).all() and (a[:, :m] == 255).all() and (a[:, -m:] == 255).all()
    assert (a[m + 1:-m - 1] < 128).any(axis=1).sum() > 0


def test_glyph_size_does_not_depend_on_the_formula_length():
    short = render_print("A")
    long = render_print("A + B + C + D + E + F + G + H")
    h_short = np.subtract(*ink_rows(short)[::-1])
    h_long = np.subtract(*ink_rows(long)[::-1])
    assert h_short == h_long  # one glyph size: fixed pixels per em, the canvas grows instead
    assert long.shape[0] == short.shape[0] and long.shape[1] > 4 * short.shape[1]
    big = render_print("A", PrintStyle(px_per_em=40.0))
    assert abs(np.subtract(*ink_rows(big)[::-1]) - 2 * h_short) <= 2


def test_no_jitter_a_straight_baseline():
    ink = print_ink("a a a a a a a a")
    sids = [int(v) for v in ink.annotations["strokeSymbols"].split()]
    glyphs: dict[int, list[np.ndarray]] = {}
    for sid, s in zip(sids, ink.strokes):
        glyphs.setdefault(sid, []).append(s[:, :2])
    assert len(glyphs) == 8
    bottoms = {round(float(max(s[:, 1].max() for s in g)), 2) for g in glyphs.values()}
    assert len(bottoms) == 1  # every 'a' sits on the same line ...
    shapes = [np.concatenate(g) - g[0][0] for g in glyphs.values()]
    assert all(np.abs(s - shapes[0]).max() <= 0.011 for s in shapes)  # ... drawn identically (to the 0.01 rounding)


@pytest.mark.parametrize("latex, expected", [
    (r"{ \cal L } = 1", r"{\mathcal{L}}=1"),
    (r"{ \bf x } y", r"{\mathbf{x}}y"),
    (r"\rm d x", r"\mathrm{dx}"),
    (r"\bf a \left( b \right) c", r"\mathbf{a\left(b\right)c}"),
    (r"\left( \bf b \right) c", r"\left(\mathbf{b}\right)c"),
    (r"\begin{matrix} \rm a & b \\ c & d \end{matrix}", r"\begin{matrix}\mathrm{a}&b\\c&d\end{matrix}"),
    (r"{ \it x } + \tiny y", r"{x}+y"),
    (r"^ { 2 } x", r"{}^{2}x"),
    (r"a ( { _ { 3 } } )", r"a({{}_{3}})"),
    (r"x ^ { 2 }", r"x ^ { 2 }"),  # nothing to rewrite: the label itself
])
def test_drawable_rewrites_only_what_the_engine_does_not_take(latex, expected):
    assert drawable(latex) == expected


_TOKENS = st.sampled_from(["x", "2", "+", "\\cal", "\\bf", "\\it", "\\tiny", "^", "_", "&", "\\\\", "\\alpha"])


@st.composite
def balanced(draw, depth=0):
    out = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.integers(0, 4 if depth < 3 else 2))
        if kind <= 2:
            out.append(draw(_TOKENS))
        elif kind == 3:
            out += ["{", *draw(balanced(depth + 1)), "}"]
        else:
            out += ["\\left", "(", *draw(balanced(depth + 1)), "\\right", ")"]
    return out


@settings(max_examples=300, deadline=None)
@given(balanced())
def test_drawable_keeps_groups_balanced_and_drops_every_declaration(toks):
    out = tokenize(drawable(" ".join(toks)))
    level = 0
    for t in out:
        level += (t == "{") - (t == "}")
        assert level >= 0
    assert level == 0
    assert not {"\\cal", "\\bf", "\\it", "\\tiny"} & set(out)
    assert out.count("\\mathcal") == toks.count("\\cal") and out.count("\\mathbf") == toks.count("\\bf")
    dropped = ("{", "}", "\\cal", "\\bf", "\\it", "\\tiny")
    added = ("{", "}", "\\mathcal", "\\mathbf")
    assert [t for t in out if t not in added] == [t for t in toks if t not in dropped]  # nothing else moves


def test_what_cannot_be_drawn_is_a_synth_error_with_the_reason():
    with pytest.raises(SynthError, match="dagger"):
        render_print(r"A ^ { \dagger }")
    with pytest.raises(SynthError, match="trailing-backslash"):
        render_print("x \\")
    with pytest.raises(ValueError):
        render_print("")


def test_rasterize_at_is_cut_to_the_ink_at_the_given_scale():
    from datasets_prep.ink import Ink
    ink = Ink(strokes=[np.array([[0.0, 0.0], [100.0, 0.0], [100.0, 50.0]])])
    r = rasterize_at(ink, 0.5, stroke_width=2.0, margin=3.0)
    assert r.image.shape == (25 + 2 * 4, 50 + 2 * 4)
    assert r.scale == 0.5 and r.offset == (4.0, 4.0)
    with pytest.raises(ValueError):
        rasterize_at(ink, 0.0)


def test_image_exact_match_with_the_print_renderer():
    assert image_exact_match(r"x + y \, ,", r"x+y,", render_print).match is True  # spacing is not ink
    assert image_exact_match(r"x ^ { 2 }", r"x _ { 2 }", render_print).match is False
    assert image_exact_match(r"\mathrm { d } x", r"d x", render_print).match is False  # upright vs italic, as in TeX
    m = image_exact_match(r"x ^ { \dagger }", "x", render_print)
    assert m.match is None and "reference" in m.reason and "dagger" in m.reason
    s = markup_scores([r"x ^ { 2 } + 1", "a"], [r"x ^ { 2 } + 1", "b"], images=True, render=render_print)
    assert s["image_exact_match"] == 0.5 and s["image_scored"] == 2


def test_write_printed_then_read_back_with_the_folder_source(tmp_path):
    labels = [r"\frac { 1 } { 2 } + x", r"A ^ { \dagger }", r"\sqrt { x ^ { 2 } + 1 }", "y = m x + c \\"]
    out = tmp_path / "printed"
    s = write_printed(labels, out, split="test")
    assert s["written"] == 3 and [r["index"] for r in s["skipped"]] == [1]
    assert s["reasons"] == {"unsupported command \\dagger (no glyph)": 1}
    assert sorted(p.name for p in (out / "test").glob("*.png")) == ["0000000.png", "0000002.png", "0000003.png"]
    skipped = json.loads((out / "test" / "print_summary.json").read_text())["skipped"]
    assert skipped[0]["label"] == labels[1] and skipped[0]["index"] == 1
    summary = convert("folder", [out], tmp_path / "shards", size=(48, 256), workers=1)
    assert summary["totals"]["rows"] == 3 and summary["totals"]["quarantined"] == 0
    t = load_split(tmp_path / "shards" / "test")
    assert t.column("sample_id").to_pylist() == ["0000000", "0000002", "0000003"]
    assert t.column("latex").to_pylist() == [labels[0], labels[2], "y = m x + c"]  # control space repaired
    # a second, smaller run into the same folder leaves no stale image behind
    write_printed(labels[:1], out, split="test")
    assert [p.name for p in (out / "test").glob("*.png")] == ["0000000.png"]
    assert json.loads((out / "test" / "print_summary.json").read_text())["skipped"] == []


def test_cli_print_style(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("x ^ { 2 }\n\\frac { a } { b }\nA ^ { \\dagger }\n")
    out = tmp_path / "o"
    assert synth_main(["--style", "print", "--labels", str(corpus), "--out", str(out), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "skipped 1 of 3" in err and "\\dagger" in err
    assert (out / "train" / "labels.tsv").read_text().count("\n") == 2
    assert synth_main(["--style", "print", "--labels", str(corpus), "--count", "2", "--out", str(tmp_path / "o2"),
                       "--split", "valid", "--quiet"]) == 0
    assert (tmp_path / "o2" / "valid" / "labels.tsv").is_file()
    assert synth_main(["--style", "print", "--out", str(out), "--quiet"]) == 2
    assert "--labels" in capsys.readouterr().err


def test_tex_renderer_missing_is_one_line_naming_the_debian_packages(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(TexUnavailable) as e:
        check_tex()
    assert all(p in str(e.value) for p in DEBIAN_PACKAGES) and "\n" not in str(e.value)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("x ^ { 2 }\n")
    assert synth_main(["--style", "print", "--renderer", "tex", "--labels", str(corpus), "--out",
                       str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --renderer tex needs latex and dvipng") and "dvipng" in err.splitlines()[-1]
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").rglob("*.png"))


@needs_tex
def test_tex_renderer_draws_and_refuses(tmp_path):
    img = render_tex(r"\frac { a } { b } + x ^ { 2 }")
    assert img.dtype == np.uint8 and img.min() < 64 and np.median(img) == 255
    with pytest.raises(SynthError, match="latex failed"):
        render_tex(r"\frac { a }")
    s = write_printed([r"x ^ { 2 }", r"\undefinedcommand x"], tmp_path / "o", renderer="tex")
    assert s["written"] == 1 and len(s["skipped"]) == 1


def test_real_formulas_draw_or_fail_with_a_reason(shared_data):
    lines = (shared_data / "latex" / "im2latex100k_val_norm.txt").read_text().splitlines()[:150]
    drawn = 0
    for line in lines:
        try:
            img = render_print(line.rstrip("\\").strip())
        except SynthError as e:
            assert e.reason
            continue
        drawn += 1
        assert img.shape[0] < 400 and img.min() == 0
    assert drawn >= 0.85 * len(lines)


@needs_tex
def test_tex_batches_give_what_each_formula_gives_alone():
    """One document for many formulas: a refused formula is found by halving, a formula that could reach
    past its page is typeset alone, and every image is the one render_tex draws by itself."""
    from datasets_prep.synth.tex import batchable, render_tex_batch

    formulas = [r"x ^ { 2 }", r"\frac { a }", r"\sum _ { i = 1 } ^ { n } i", r"\def\x{y} \x + 1", r"\sqrt { b }",
                "", r"\alpha \beta", r"\undefinedcommand x", r"e ^ { i \pi } = - 1"]
    assert not batchable(formulas[3]) and batchable(formulas[0])
    got = render_tex_batch(formulas, batch=4)
    for latex, one in zip(formulas, got):
        try:
            alone = render_tex(latex)
        except SynthError as exc:
            assert isinstance(one, SynthError) and one.reason == exc.reason, latex
        else:
            assert isinstance(one, np.ndarray) and np.array_equal(one, alone), latex


@needs_tex
def test_auto_draws_with_tex_and_falls_back_to_the_engine_saying_which(tmp_path):
    from datasets_prep.synth.print_variation import PrintVariation

    # \lt: the engine draws it (CROHME spells < so), TeX does not know it; \fbox: the other way round
    labels = [r"x ^ { 2 }", r"{ \fbox { a } }", r"x \lt y", r"\undefinedcommand x"]
    s = write_printed(labels, tmp_path / "o", renderer="auto", variation=PrintVariation(seed=2))
    assert s["tex_available"] and s["drawn_by"] == {"tex": 2, "layout": 1} and s["layout_fallback"] == [2], s
    assert [k["index"] for k in s["skipped"]] == [3]
    again = write_printed(labels, tmp_path / "p", renderer="auto", variation=PrintVariation(seed=2))
    for name in (tmp_path / "o" / "train").glob("*.png"):
        assert name.read_bytes() == (tmp_path / "p" / "train" / name.name).read_bytes()
    assert again["drawn_by"] == s["drawn_by"]


def test_auto_without_tex_draws_everything_with_the_engine(tmp_path, monkeypatch):
    import datasets_prep.synth.tex as tex

    monkeypatch.setattr(tex.shutil, "which", lambda name: None)
    s = write_printed([r"x ^ { 2 }", r"\frac { a } { b }"], tmp_path / "o", renderer="auto")
    assert s["tex_available"] is False and s["drawn_by"] == {"layout": 2} and s["layout_fallback"] == []


def test_each_image_draws_its_font_from_seed_and_index_alone():
    from datasets_prep.synth.print_set import font_of

    fonts = ("cm", "times", "palatino")
    drawn = [font_of(i, fonts, seed=3) for i in range(300)]
    assert drawn == [font_of(i, fonts, seed=3) for i in range(300)]  # the same answer every time
    assert all(70 < drawn.count(f) < 130 for f in fonts)  # uniform
    assert drawn != [font_of(i, fonts, seed=4) for i in range(300)]
    assert {font_of(i, ("times",), seed=3) for i in range(20)} == {"times"}


def test_an_unknown_font_is_refused_before_anything_is_drawn(tmp_path):
    with pytest.raises(ValueError, match="unknown TeX font 'comic'"):
        write_printed([r"x ^ { 2 }"], tmp_path / "o", renderer="tex", fonts=("cm", "comic"))
    assert not any((tmp_path / "o").rglob("*.png"))


@needs_tex
def test_tex_draws_each_formula_in_its_own_font(tmp_path):
    """Every font this TeX has (the five of the base packages, and FONT_PACKAGES' five where installed),
    one different image each of one formula; a set in several fonts holds, for each image, exactly
    what render_tex draws in the font font_of gave it, and counts the fonts."""
    from datasets_prep.synth.print_set import font_of
    from datasets_prep.synth.tex import FONT_PACKAGES, FONTS, font_available

    formula = r"\int _ { 0 } ^ { \infty } e ^ { - x ^ { 2 } } d x = \frac { \sqrt { \pi } } { 2 } \mathbb { R }"
    here = [font for font in FONTS if font_available(font)]
    images = {font: render_tex(formula, font=font) for font in here}
    assert {"cm", "times", "palatino", "euler", "sans"} <= set(images)
    assert set(FONTS) - set(images) <= set(FONT_PACKAGES)
    looks = list(images.values())
    assert all(not np.array_equal(a, b) for i, a in enumerate(looks) for b in looks[i + 1:])  # one look each
    labels = [r"x ^ { 2 }", formula, r"\alpha \beta + \gamma", r"\sum _ { i } a _ { i }", r"\frac { a } { b }",
              r"\undefinedcommand x"]
    s = write_printed(labels, tmp_path / "o", renderer="tex", fonts=tuple(here))
    assert s["written"] == 5 and sum(s["tex_fonts"].values()) == 5 and len(s["tex_fonts"]) >= 2, s
    from PIL import Image
    for i, latex in enumerate(labels[:5]):
        got = np.asarray(Image.open(tmp_path / "o" / "train" / f"{i:07d}.png").convert("L"))
        assert np.array_equal(got, render_tex(latex, font=font_of(i, tuple(here)))), i


@needs_tex
def test_a_font_whose_files_tex_lacks_is_refused_naming_its_package(tmp_path, monkeypatch):
    """Not one formula refused at a time (every image would fall back to the engine): one error before
    anything is drawn, naming the Debian package, and the CLI's exit 2."""
    from datasets_prep.synth import tex
    from datasets_prep.synth.__main__ import main

    monkeypatch.setitem(tex._FONT_STY, "kpfonts", "no-such-style-file-here.sty")
    with pytest.raises(tex.TexUnavailable, match="apt-get install texlive-fonts-extra"):
        write_printed([r"x ^ { 2 }"], tmp_path / "o", renderer="auto", fonts=("cm", "kpfonts"))
    assert not any((tmp_path / "o").rglob("*.png"))
    labels = tmp_path / "labels.txt"
    labels.write_text("x ^ { 2 }\n")
    assert main(["--style", "print", "--renderer", "tex", "--fonts", "kpfonts", "--labels", str(labels),
                 "--out", str(tmp_path / "o2"), "--quiet"]) == 2
    assert tex.font_available("cm")


@needs_tex
def test_print_cpu_stops_on_a_font_before_drawing_anything(tmp_path):
    """benchmarks/print_cpu.sh goes on past a formula TeX refuses; a font it cannot draw at all stops it
    at once (exit 2, the reason on stderr), before the corpus is split or a picture drawn."""
    import subprocess
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "benchmarks" / "print_cpu.sh"
    done = subprocess.run(["bash", str(script), str(tmp_path / "no-corpus"), str(tmp_path / "work"), "ar"],
                          env={**os.environ, "FONTS": "cm", "UNSEEN": "comic"}, capture_output=True, text=True,
                          timeout=120, cwd=script.parent.parent)
    assert done.returncode == 2, done.stderr
    assert "unknown TeX font 'comic'" in done.stderr
    assert not (tmp_path / "work" / "printed-corpus").exists()
