"""datasets_prep.render: geometry, dots, centring, determinism and the PNG encoder."""
from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from PIL import Image

from datasets_prep.ink import Ink
from datasets_prep.render import fit, parse_size, png_bytes, rasterize, render_ink


def ink(*strokes) -> Ink:
    return Ink([np.asarray(s, dtype=np.float64) for s in strokes])


def ink_box(img: np.ndarray, thresh: int = 128) -> tuple[int, int, int, int]:
    ys, xs = np.nonzero(img < thresh)
    return int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())


def test_output_type_background_and_ink():
    img = render_ink(ink([[0, 0], [10, 5]]))
    assert img.dtype == np.uint8 and img.shape == (224, 224)
    assert img[0, 0] == 255 and img.min() == 0  # white background, fully black ink core


def test_custom_size_is_height_by_width():
    img = render_ink(ink([[0, 0], [10, 10]]), size=(112, 448))
    assert img.shape == (112, 448)
    assert parse_size("112x448") == (112, 448)
    with pytest.raises(ValueError):
        parse_size("224")


def test_aspect_ratio_is_kept_and_ink_is_centred_with_margin():
    # a 4:1 rectangle outline
    img = render_ink(ink([[0, 0], [40, 0], [40, 10], [0, 10], [0, 0]]), stroke_width=2.0, margin=8.0)
    x0, y0, x1, y1 = ink_box(img)
    w, h = x1 - x0, y1 - y0
    assert abs(w / h - 4.0) < 0.3  # aspect within a stroke width, never stretched to the square
    assert x0 >= 7 and 224 - 1 - x1 >= 7  # width-limited: margins on the left and right
    assert abs((y0 + y1) / 2 - 111.5) <= 1.0  # vertically centred


def test_single_point_stroke_is_a_dot():
    img = render_ink(ink([[0, 0], [100, 0]], [[50, 40]]), stroke_width=3.0)
    # the dot lies below the line (y grows downward), round, about stroke-width wide
    r = rasterize(ink([[0, 0], [100, 0]], [[50, 40]]), stroke_width=3.0)
    cx, cy = 50 * r.scale + r.offset[0], 40 * r.scale + r.offset[1]
    assert img[int(cy), int(cx)] < 60
    dark = np.argwhere(img[int(cy) - 5:int(cy) + 6, int(cx) - 5:int(cx) + 6] < 128)
    assert 2 <= np.ptp(dark[:, 0]) + 1 <= 4 and 2 <= np.ptp(dark[:, 1]) + 1 <= 4


@pytest.mark.parametrize("strokes", [[[[5, 5]]], [[[5, 5], [5, 5], [5, 5]]], [[[3, 3]], [[3, 3]]]])
def test_zero_extent_ink_is_a_centred_dot(strokes):
    img = render_ink(ink(*strokes))
    x0, y0, x1, y1 = ink_box(img)
    assert abs((x0 + x1) / 2 - 111.5) <= 1 and abs((y0 + y1) / 2 - 111.5) <= 1
    assert x1 - x0 <= 3


def test_one_axis_zero_extent_line_fills_the_width():
    img = render_ink(ink([[0, 7], [50, 7]]), margin=8.0, stroke_width=2.0)
    x0, y0, x1, y1 = ink_box(img)
    assert x0 <= 10 and x1 >= 213 and y1 - y0 <= 3


def test_stroke_width_changes_ink_amount():
    thin = (render_ink(ink([[0, 0], [30, 20], [60, 0]]), stroke_width=1.0) < 128).sum()
    thick = (render_ink(ink([[0, 0], [30, 20], [60, 0]]), stroke_width=4.0) < 128).sum()
    assert thick > 2.5 * thin


def test_identical_input_identical_bytes_and_xyt_same_as_xy():
    a = ink([[0, 0, 0], [10, 3, 5], [20, 1, 9]], [[4, 4, 20]])
    b = ink([[0, 0], [10, 3], [20, 1]], [[4, 4]])
    assert png_bytes(render_ink(a)) == png_bytes(render_ink(a)) == png_bytes(render_ink(b))


def test_bad_margin_is_an_error():
    with pytest.raises(ValueError):
        render_ink(ink([[0, 0], [1, 1]]), size=(16, 16), margin=10)
    with pytest.raises(ValueError):
        render_ink(Ink([]))


def test_fit_maps_bbox_inside_canvas():
    scale, (ox, oy) = fit((-100, 50, 300, 150), (224, 224), 2.0, 8.0)
    assert np.isclose(-100 * scale + ox, 9.0) and np.isclose(300 * scale + ox, 215.0)


@settings(max_examples=50, deadline=None)
@given(arrays(np.uint8, st.tuples(st.integers(1, 40), st.integers(1, 40))))
def test_png_round_trip(arr):
    """Any uint8 image survives png_bytes -> PIL decode exactly, as 8-bit grayscale."""
    im = Image.open(io.BytesIO(png_bytes(arr)))
    assert im.mode == "L"
    np.testing.assert_array_equal(np.array(im), arr)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.tuples(st.floats(-1e4, 1e4), st.floats(-1e4, 1e4)), min_size=1, max_size=20),
                min_size=1, max_size=5))
@example([[(1.0, 0.0), (1.0, 5.58e-251)]])  # found by hypothesis: a dot stretched onto the border
def test_any_ink_renders_inside_the_canvas(strokes):
    """Whatever the coordinates, the ink lands inside the canvas, margin respected (to AA precision)."""
    img = render_ink(ink(*strokes), margin=8.0, stroke_width=2.0)
    assert (img < 255).any()
    dark = img < 250
    assert not dark[:6].any() and not dark[-6:].any() and not dark[:, :6].any() and not dark[:, -6:].any()


@pytest.mark.parametrize("strokes", [
    [[(1.0, 0.0), (1.0, 5.58e-251)]],            # the example hypothesis found: a dot with denormal jitter
    [[(500.0, 300.0), (500.0 + 1e-9, 300.0 - 1e-9)]],
    [[(0.0, 0.0)], [(1e-9, 1e-9)]],
])
def test_a_dot_with_rounding_jitter_stays_a_dot(strokes):
    img = render_ink(ink(*strokes), margin=8.0, stroke_width=2.0)
    dark = img < 250
    assert 0 < dark.sum() <= 16  # a round cap of 2 px, not a bar across the canvas
    ys, xs = np.nonzero(dark)
    assert abs(ys.mean() - img.shape[0] / 2) < 2 and abs(xs.mean() - img.shape[1] / 2) < 2


def test_a_line_with_jitter_across_it_stays_a_line():
    img = render_ink(ink([(0.0, 10.0), (100.0, 10.0 + 1e-9)]), margin=8.0, stroke_width=2.0)
    rows = np.nonzero((img < 250).any(axis=1))[0]
    assert len(rows) <= 4  # a 2 px line, not stretched into a slope


def test_glyph_extent_is_the_median_stroke_size():
    from datasets_prep.render import glyph_extent

    strokes = [np.array([[0, 0], [0, 10]]), np.array([[0, 0], [4, 0]]), np.array([[0, 0], [100, 1]])]
    assert glyph_extent(strokes) == 10.0  # the long bar does not set the glyph size


def test_max_glyph_caps_the_scale_of_a_short_ink_and_leaves_a_long_one_alone():
    short = ink([[0, 0], [0, 10]], [[5, 0], [5, 10]])  # two 10-unit strokes: "11"
    fitted = rasterize(short, size=(96, 384))
    capped = rasterize(short, size=(96, 384), max_glyph=20.0)
    assert fitted.scale > 2.0 and capped.scale == pytest.approx(2.0)
    x0, y0, x1, y1 = ink_box(capped.image)
    assert 18 <= y1 - y0 <= 23 and abs((y0 + y1) / 2 - 47.5) <= 1.0  # 20 px tall (+ the pen), centred
    long = ink(*[[[10 * i, 0], [10 * i, 10]] for i in range(60)])  # sixty glyphs side by side
    assert rasterize(long, size=(96, 384), max_glyph=20.0).scale == rasterize(long, size=(96, 384)).scale


@given(st.lists(arrays(np.float64, st.tuples(st.integers(1, 6), st.just(2)),
                       elements=st.floats(-1e3, 1e3, allow_nan=False)), min_size=1, max_size=5),
       st.floats(1.0, 60.0))
@settings(max_examples=60, deadline=None)
def test_a_glyph_cap_never_enlarges_and_keeps_the_ink_inside(strokes, cap):
    drawing = Ink(strokes)
    free, capped = rasterize(drawing, size=(64, 256)), rasterize(drawing, size=(64, 256), max_glyph=cap)
    assert capped.scale <= free.scale + 1e-12
    assert (capped.image < 255).any() or not (free.image < 255).any()
    ys, xs = np.nonzero(capped.image < 255)
    if len(xs):
        assert xs.min() >= 0 and xs.max() < 256 and ys.min() >= 0 and ys.max() < 64


def test_training_and_evaluation_import_without_cairo():
    """Shards already hold rendered images, so a machine without the cairo library (a bare GPU box)
    must still import the trainer, the evaluator and the renderer's constants; cairo loads at the first drawing."""
    import subprocess
    import sys

    code = ("import sys\n"
            "class NoCairo:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('cairocffi', 'cairosvg'):\n"
            "            raise ImportError('no cairo here: ' + name)\n"
            "sys.meta_path.insert(0, NoCairo())\n"
            "import train.run, train.eval, train.predict\n"
            "from datasets_prep.render import ANTIALIAS, parse_size\n"
            "assert 'cairocffi' not in sys.modules and parse_size('96x384') == (96, 384)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
