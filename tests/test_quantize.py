"""datasets_prep.quantize: a palette PNG that decodes to exactly the nearest gray levels, and much smaller."""
from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from PIL import Image

from datasets_prep.image_intake import ImageError
from datasets_prep.quantize import LEVELS, quantize_gray, quantize_png


def png(gray: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(gray, mode="L").save(buf, format="PNG")
    return buf.getvalue()


def decoded(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as im:
        return np.asarray(im.convert("L"))


@settings(max_examples=40, deadline=None)
@given(gray=arrays(np.uint8, st.tuples(st.integers(1, 24), st.integers(1, 48))), levels=st.sampled_from(LEVELS))
def test_the_round_trip_is_the_nearest_level(gray, levels):
    back = decoded(quantize_png(png(gray), levels)).astype(int)
    grays = np.array([round(255 * (1 - k / (levels - 1))) for k in range(levels)])
    distance = np.abs(gray.astype(int)[..., None] - grays)              # every pixel to every level
    assert np.all(np.abs(back - gray) == distance.min(-1))              # the nearest one came back
    assert set(np.unique(back)) <= set(grays.tolist())
    assert np.array_equal(decoded(quantize_png(png(back.astype(np.uint8)), levels)), back)  # idempotent


def test_paper_and_black_stay_and_two_levels_cut_at_mid_gray():
    gray = np.array([[255, 200, 128, 127, 0]], np.uint8)
    assert quantize_gray(gray, 2).tolist() == [[0, 0, 0, 1, 1]]
    assert quantize_gray(gray, 4).tolist() == [[0, 1, 1, 2, 3]]


def test_a_noisy_printed_line_shrinks_several_times():
    rng = np.random.default_rng(0)
    gray = np.full((64, 512), 255.0)
    for x in range(40, 470, 30):                       # glyph-like blocks of ink with gray edges
        gray[20:44, x:x + 12] = 20
        gray[20:44, x + 12] = 150
    gray[gray < 255] += rng.normal(0, 8, int((gray < 255).sum()))
    gray = np.clip(gray, 0, 255).astype(np.uint8)
    original = png(gray)
    assert len(quantize_png(original, 4)) * 3 < len(original)
    assert len(quantize_png(original, 2)) < len(quantize_png(original, 4)) < len(quantize_png(original, 16))


def test_bad_input_is_named():
    with pytest.raises(ImageError, match="not an image"):
        quantize_png(b"\x89PNG\r\n\x1a\n broken")
    with pytest.raises(ValueError, match="one of 2, 4, 16"):
        quantize_png(png(np.zeros((2, 2), np.uint8)), levels=3)
