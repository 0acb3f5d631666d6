"""Unit tests of the synthesizer: normalized truths, the adapter, layout geometry, style, determinism."""
from __future__ import annotations

import numpy as np
import pytest

from datasets_prep.ink import Ink
from datasets_prep.synth import Style, SynthError, canonical_label, random_label, synthesize
from datasets_prep.synth import glyphs
from datasets_prep.synth.labels import CROHME_SYMBOLS
from datasets_prep.synth.latex import parse_label, spaced


def symbols_of(ink: Ink) -> list[tuple[str, tuple[float, float, float, float]]]:
    """(label, bbox) of every visible symbol, in writing order, from the synthesizer's annotations."""
    labels = ink.annotations["symbolLabels"].split("\t")
    sids = [int(s) for s in ink.annotations["strokeSymbols"].split()]
    pts: dict[int, list[np.ndarray]] = {}
    for sid, stroke in zip(sids, ink.strokes):
        pts.setdefault(sid, []).append(stroke[:, :2])
    out = []
    for sid in sorted(pts):
        xy = np.concatenate(pts[sid])
        out.append((labels[sid], (xy[:, 0].min(), xy[:, 1].min(), xy[:, 0].max(), xy[:, 1].max())))
    return out


def neat(latex: str) -> list[tuple[str, tuple[float, float, float, float]]]:
    return symbols_of(synthesize(latex, np.random.default_rng(0), style=Style.neat()))


def find(syms, label, k=0):
    return [b for lab, b in syms if lab == label][k]


# ---- canonical labels: the truth is tokenizer.normalize(label) --------------------------------
@pytest.mark.parametrize("raw, canonical", [
    ("x^2", "x^{2}"),
    ("x^2_i", "x_{i}^{2}"),
    (r"x_{i}^{2}", "x_{i}^{2}"),
    (r"\frac12", r"\frac{1}{2}"),
    (r"\dfrac{a}{b}", r"\frac{a}{b}"),
    ("f'(x)", r"f^{\prime}(x)"),
    ("f''", r"f^{\prime\prime}"),
    (r"f ^ { ' } ( x )", r"f^{'}(x)"),
    (r"{}^{14}C", r"{}^{14}C"),
    (r"\sqrt [ 3 ] { x }", r"\sqrt[3]{x}"),
    (r"\left( \frac12 \right)", r"(\frac{1}{2})"),
    (r"\left. x \right|", r"x|"),
    (r"\big( x \Big)", r"(x)"),
    (r"\begin{matrix}1&0\\0&1\end{matrix}", r"\begin{matrix}1&0\\ 0&1\end{matrix}"),
    (r"\begin{pmatrix}a&&b\\c&d&\end{pmatrix}", r"\begin{pmatrix}a&&b\\ c&d&\end{pmatrix}"),
    (r"\begin{array}{cc}a&b\end{array}", r"\begin{matrix}a&b\end{matrix}"),
    (r"\sum\limits_{i=1}^{n}", r"\sum_{i=1}^{n}"),
    (r"\lim_{x\to0}", r"\lim_{x\rightarrow0}"),
    (r"\alpha x", r"\alpha x"),
    (r"\text{if }x", r"\text{if}x"),
    (r"\mbox{a b}", r"\text{a b}"),
    (r"a\,b\quad c", r"abc"),
    (r"\hat x + \vec{v} + \overline{ab}", r"\hat{x}+\vec{v}+\overline{ab}"),
    (r"\not=", r"\not="),
    (r"\mathbb{R}^{n}", r"\mathbb{R}^{n}"),
    (r"\operatorname{sin}x", r"\sin x"),
    (r"a^{b^{c}}", r"a^{b^{c}}"),
    (r"{a^{b}}^{c}", r"{a^{b}}^{c}"),
    (r"\{x\}_{i}", r"\{x\}_{i}"),
    (r"\displaystyle x", "x"),
    (r"x \le y \ne z", r"x\leq y\neq z"),
    ("αβ", r"\alpha\beta"),
])
def test_canonical_label_is_the_tokenizers_normal_form(raw, canonical):
    from tokenizer import normalize

    assert canonical_label(raw) == canonical == normalize(raw)
    assert canonical_label(canonical) == canonical == normalize(canonical)
    ink = synthesize(raw, np.random.default_rng(0))
    assert ink.annotations["label"] == ink.annotations["normalizedLabel"] == canonical


@pytest.mark.parametrize("bad, reason", [
    ("x^{2}^{3}", "double-script"),
    ("x_1_2", "double-script"),
    ("x^", "missing-argument"),
    ("}x", "unbalanced-brace"),
    ("x{", "expected '}'"),
    ("\\", "trailing-backslash"),
    ("x \\", "trailing-backslash"),
    (r"\foo{x}", "unsupported command \\foo"),
    ("你好", "unsupported character"),
    (r"\text{\alpha}", "commands inside \\text"),
    ("", "no visible symbol"),
    ("   ", "no visible symbol"),
    ("{}", "no visible symbol"),
    (r"\left( x", "unpaired-left"),
    (r"x \right)", "unpaired-right"),
    (r"a & b", "outside a matrix"),
    (r"\begin{tabular}{c}x\end{tabular}", "unsupported environment"),
    (r"\begin{matrix}x", "expected '\\\\end{matrix}'"),
    (r"\frac{a}", "missing-argument"),
    (r"^{2}", "no base"),
    (r"\sqrt[]{x}", "empty root index"),
    (r"\not", "\\not needs a symbol"),
    ("{" * 250 + "x" + "}" * 250, "nest"),
    (r"\sqrt" * 200 + "x", "nest"),
    ("x" + "^{x" * 100 + "}" * 100, "nest"),
    ("x+" * 2000 + "1", "label too long"),
], ids=lambda v: v if len(v) < 40 else f"{v[:20]}...({len(v)} chars)")
def test_unsupported_is_reported_with_reason(bad, reason):
    with pytest.raises(SynthError) as e:
        synthesize(bad, np.random.default_rng(0))
    assert reason in e.value.reason
    assert e.value.label == bad
    assert bad in str(e.value) or repr(bad) in str(e.value)


def test_truth_tokens_and_text_spaces():
    from tokenizer import tokenize

    norm, toks, _ = parse_label(r"\text{a  b} + x")
    assert norm == r"\text{a b}+x" and toks == tokenize(norm)
    assert spaced(toks) == r"\text{a b} + x"  # a text group stays one chunk: its space is content
    ink = synthesize(r"\text{a  b} + x", np.random.default_rng(0))
    assert ink.annotations["symbolLabels"].split("\t") == [r"\text{a b}", "+", "x"]


def test_spaced_truth_is_space_tokenized():
    assert spaced(parse_label(r"\frac{1}{x}+\sqrt[3]{y}")[1]) == r"\frac { 1 } { x } + \sqrt [ 3 ] { y }"
    assert spaced(parse_label(r"\left(x\right)")[1]) == r"( x )"


def test_matching_delimiters_around_structure_become_fences():
    from datasets_prep.synth.latex import Fence, Scripts, Sym
    items = parse_label(r"(\frac{a}{b})^{2}")[2].items  # the script on ')' goes on the whole fence
    assert len(items) == 1 and type(items[0]) is Scripts and type(items[0].base) is Fence
    items = parse_label(r"\{x|x^{2}>0\}")[2].items  # the bar inside stays a symbol
    assert [type(x) for x in items] == [Fence] and Sym("|") in items[0].body.items
    assert all(type(x) is Sym for x in parse_label(r"[0,\frac{1}{2})")[2].items[:3])  # no match: symbols
    assert [type(x) for x in parse_label(r"|\sqrt{x}|+|y|")[2].items] == [Fence] + [Sym] * 4
    assert all(type(x) is Sym for x in parse_label("(a+b)")[2].items)  # around plain symbols: as written


# ---- glyph inventory ------------------------------------------------------------------------------
def test_every_crohme_symbol_is_drawable():
    skip = {"\\frac", "\\sqrt", "\\limits"}  # structures, not glyphs
    for sym in sorted(CROHME_SYMBOLS - skip):
        ink = synthesize(sym if sym != "\\prime" else "f^{\\prime}", np.random.default_rng(0))
        assert ink.num_points > 0, sym


def test_templates_are_evenly_sampled_em_units():
    t = glyphs.template("x")
    assert t.points.dtype == np.float64 and t.points.shape[1] == 2
    assert t.num_strokes == 2
    assert -1.2 < t.top < -0.5 and -0.05 < t.bottom < 0.1  # x-height glyph on the baseline
    first = t.points[t.starts[0]:t.starts[1]]
    steps = np.hypot(*np.diff(first, axis=0).T)
    assert steps.max() <= glyphs.SPACING * 1.01
    assert glyphs.template("\\nonexistent") is None


# ---- layout geometry (neat style: no jitter, so positions are the layout's) ----------------------
def test_superscript_is_smaller_and_raised_subscript_lowered():
    s = neat("x^{2}_{2}")
    x = find(s, "x")
    sub, sup = find(s, "2", 0), find(s, "2", 1)
    hx = x[3] - x[1]
    for b in (sub, sup):
        assert b[0] > x[2] - 1  # to the right of the base
    assert (sup[3] - sup[1]) < 1.2 * hx
    assert sup[3] < x[3] and sup[1] < x[1]          # raised
    assert sub[3] > x[3]                              # lowered below the baseline
    nested = neat("x^{y^{z}}")
    hy = find(nested, "y")[3] - find(nested, "y")[1]
    hz = find(nested, "z")[3] - find(nested, "z")[1]
    assert hz < hy  # nested scripts shrink again
    assert find(nested, "z")[1] < find(nested, "y")[1]


def test_fraction_bar_spans_parts_and_separates_them():
    s = neat(r"\frac{a+b+c}{d}")
    bar = find(s, "-")
    num = [find(s, c) for c in "abc"]
    den = find(s, "d")
    assert bar[0] <= min(b[0] for b in num) and bar[2] >= max(b[2] for b in num)
    assert all(b[3] < bar[1] for b in num) and den[1] > bar[3]
    wide = neat(r"\frac{a+b+c+d}{e}")
    assert (find(wide, "-")[2] - find(wide, "-")[0]) > (bar[2] - bar[0])


def test_sqrt_covers_radicand_and_index_sits_left():
    s = neat(r"\sqrt[3]{x+y}")
    rad = find(s, "\\sqrt")
    for c in ("x", "+", "y"):
        b = find(s, c)
        assert rad[0] < b[0] and rad[2] >= b[2] - 1 and rad[1] < b[1]
    idx = find(s, "3")
    assert idx[2] < find(s, "x")[0] and idx[3] < rad[3]
    tall = find(neat(r"\sqrt{\frac{a}{b}}"), "\\sqrt")
    assert (tall[3] - tall[1]) > (rad[3] - rad[1])


def test_big_operator_limits_above_and_below_integral_scripts_beside():
    s = neat(r"\sum_{i=1}^{n}x")
    op, lo, hi = find(s, "\\sum"), find(s, "i"), find(s, "n")
    assert lo[1] > op[3] and hi[3] < op[1]
    cx = (op[0] + op[2]) / 2
    assert lo[0] < cx < find(s, "1")[2] and hi[0] < cx < hi[2] + 20
    assert find(s, "x")[0] > op[2]
    t = neat(r"\int_{0}^{1}x")
    integral, lo, hi = find(t, "\\int"), find(t, "0"), find(t, "1")
    assert lo[0] > (integral[0] + integral[2]) / 2 and hi[0] > (integral[0] + integral[2]) / 2
    assert hi[3] < lo[1]


def test_left_right_delimiters_grow_with_content():
    small = find(neat(r"\left(x\right)"), "(")
    big = find(neat(r"\left(\frac{a}{b}\right)"), "(")
    assert (big[3] - big[1]) > 1.25 * (small[3] - small[1])
    s = neat(r"\left(\frac{a}{b}\right)")
    assert big[1] <= find(s, "a")[1] and big[3] >= find(s, "b")[3]


def test_matrix_is_a_grid():
    s = neat(r"\begin{pmatrix}a&b\\c&d\end{pmatrix}")
    a, b, c, d = (find(s, k) for k in "abcd")
    assert a[2] < b[0] and c[2] < d[0]       # columns
    assert a[3] < c[1] and b[3] < d[1]       # rows
    lp, rp = find(s, "("), find(s, ")")
    assert lp[2] < a[0] and rp[0] > b[2]


def test_accents_sit_above_their_base():
    for acc in ("\\hat", "\\bar", "\\vec", "\\tilde", "\\dot", "\\overline"):
        s = neat(acc + "{x}")
        assert find(s, acc)[3] < find(s, "x")[1], acc
    s = neat(r"\overline{abc}")
    assert find(s, "\\overline")[2] - find(s, "\\overline")[0] > 2 * (find(s, "a")[2] - find(s, "a")[0])


def test_writing_order_is_left_to_right_on_a_line():
    s = neat("a+b=c")
    xs = [b[0] for _, b in s]
    assert xs == sorted(xs) and [lab for lab, _ in s] == list("a+b=c")


# ---- ink shape, timing, style, determinism -------------------------------------------------------
def test_ink_shape_and_timing():
    ink = synthesize(r"\frac{a}{b}+\sqrt{x}", np.random.default_rng(3))
    assert ink.num_strokes >= 5
    for s in ink.strokes:
        assert s.dtype == np.float64 and s.ndim == 2 and s.shape[1] == 3
        assert np.isfinite(s).all()
        assert np.all(np.diff(s[:, 2]) > 0)  # sampled in time order within a stroke
    t = np.concatenate([s[:, 2] for s in ink.strokes])
    assert t[0] == 0 and np.all(np.diff(t) > 0)  # a person writes one stroke after another
    starts = [s[0, 2] for s in ink.strokes[1:]]
    ends = [s[-1, 2] for s in ink.strokes[:-1]]
    assert min(b - a for a, b in zip(ends, starts)) >= 10  # pen-up pauses between strokes
    assert np.allclose(np.concatenate(ink.strokes)[:, :2], np.round(np.concatenate(ink.strokes)[:, :2], 2))


def test_same_seed_same_ink_other_seed_other_ink():
    a = synthesize("x^{2}+1", np.random.default_rng(7))
    b = synthesize("x^{2}+1", np.random.default_rng(7))
    c = synthesize("x^{2}+1", np.random.default_rng(8))
    assert len(a.strokes) == len(b.strokes) and all(np.array_equal(p, q) for p, q in zip(a.strokes, b.strokes))
    assert not all(p.shape == q.shape and np.allclose(p, q) for p, q in zip(a.strokes, c.strokes))


def test_style_varies_handwriting_but_neat_is_the_layout():
    rng = np.random.default_rng(0)
    styles = [Style.sample(rng) for _ in range(50)]
    assert len({s.font for s in styles}) == 2
    assert np.std([s.slant for s in styles]) > 0.03 and np.std([s.em for s in styles]) > 10
    one = synthesize("abc", np.random.default_rng(1), style=Style.neat())
    two = synthesize("abc", np.random.default_rng(2), style=Style.neat())
    assert all(np.array_equal(p[:, :2], q[:, :2]) for p, q in zip(one.strokes, two.strokes))
    jit = synthesize("abc", np.random.default_rng(1), style=Style(origin=(0.0, 0.0)))
    neat_ = synthesize("abc", np.random.default_rng(1), style=Style.neat(origin=(0.0, 0.0)))
    d = np.concatenate(jit.strokes)[:, :2] - np.concatenate(neat_.strokes)[:, :2]
    assert 0.5 < np.abs(d).mean() < 30  # jittered, but still the same glyphs in the same places


def test_annotations_carry_label_forms():
    ink = synthesize("x^2+\\frac12", np.random.default_rng(0))
    a = ink.annotations
    assert a["label"] == a["normalizedLabel"] == r"x^{2}+\frac{1}{2}"
    assert a["truth"] == r"$x ^ { 2 } + \frac { 1 } { 2 }$"
    assert len(a["strokeSymbols"].split()) == ink.num_strokes


# ---- random labels ---------------------------------------------------------------------------------
def test_random_label_depth_and_length_control():
    rng = np.random.default_rng(0)
    flat = [random_label(rng, depth=0, length=5) for _ in range(200)]
    assert all(not any(c in lab for c in "^_{") for lab in flat)
    from tokenizer import tokenize

    def visible(lab):
        return sum(t not in "{}^_[]" for t in tokenize(lab))
    short = np.mean([visible(random_label(rng, depth=2, length=4)) for _ in range(300)])
    long = np.mean([visible(random_label(rng, depth=2, length=20)) for _ in range(300)])
    assert short < 8 < 14 < long
    deep = [random_label(rng, depth=3, length=16) for _ in range(300)]
    assert max(lab.count("{") for lab in deep) > max(lab.count("{") for lab in
                                                    [random_label(rng, depth=1, length=16) for _ in range(300)])
    with pytest.raises(ValueError):
        random_label(rng, depth=-1)


def test_random_labels_use_the_crohme_symbol_set_and_cover_it():
    rng = np.random.default_rng(1)
    from tokenizer import tokenize
    seen = set()
    for _ in range(4000):
        seen |= set(tokenize(random_label(rng, depth=3, length=12)))
    seen -= set("{}^_")
    assert seen <= CROHME_SYMBOLS
    assert CROHME_SYMBOLS - seen <= {"\\limits"}


def test_stroke_reordering_keeps_symbols_whole_and_time_monotonic():
    plain = synthesize("a=b", np.random.default_rng(0), style=Style.neat())
    flipped = synthesize("a=b", np.random.default_rng(0), style=Style.neat(reorder=1.0))
    sids_p = plain.annotations["strokeSymbols"].split()
    sids_f = flipped.annotations["strokeSymbols"].split()
    assert sids_p == sids_f  # strokes of a symbol stay together, symbols stay in writing order
    eq_p = [s for s, k in zip(plain.strokes, sids_p) if k == "1"]
    eq_f = [s for s, k in zip(flipped.strokes, sids_f) if k == "1"]
    assert np.array_equal(eq_p[0][:, :2], eq_f[1][:, :2]) and np.array_equal(eq_p[1][:, :2], eq_f[0][:, :2])
    t = np.concatenate([s[:, 2] for s in flipped.strokes])
    assert np.all(np.diff(t) > 0)
