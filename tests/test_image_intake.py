"""datasets_prep.image_intake: every image a user can hand over either becomes the same canvas a
rendered ink would, or is refused with a reason. The crafted files are made here."""
from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image, ImageFilter

from datasets_prep.image_intake import MAX_PIXELS, ImageError, image_to_canvas
from datasets_prep.render import png_bytes, render_ink
from datasets_prep.synth import synthesize

SIZE = (64, 256)


@pytest.fixture(scope="module")
def page() -> np.ndarray:
    """A rendered expression, black ink on white, on a larger page than the canvas."""
    ink = synthesize("x^{2}+\\frac{1}{y}", np.random.default_rng(4))
    return render_ink(ink, size=(120, 400))


def _png(arr: np.ndarray, mode: str | None = None) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr, mode).save(buf, format="PNG")
    return buf.getvalue()


def _reference(page: np.ndarray) -> np.ndarray:
    return image_to_canvas(_png(page), SIZE)


def _dilate(mask: np.ndarray) -> np.ndarray:
    return np.asarray(Image.fromarray(mask.astype(np.uint8) * 255).filter(ImageFilter.MaxFilter(3))) > 0


def _within_a_pixel(a: np.ndarray, b: np.ndarray) -> float:
    """Share of each mask's ink that lies within one pixel of the other's (the smaller of the two)."""
    return min((_dilate(a) & b).sum() / max(1, b.sum()), (_dilate(b) & a).sum() / max(1, a.sum()))


def test_a_page_lands_where_the_renderer_puts_the_same_ink(page):
    ink = synthesize("x^{2}+\\frac{1}{y}", np.random.default_rng(4))
    rendered = (255 - render_ink(ink, size=SIZE)) / 255.0 > 0.35
    canvas = _reference(page)
    assert canvas.shape == SIZE and canvas.dtype == np.float32
    assert canvas[:6].max() == 0 and canvas[-6:].max() == 0  # the renderer's 8 px margin, less a pixel
    assert _within_a_pixel(canvas > 0.35, rendered) > 0.9
    # at the same size, the intake gives back the renderer's own pixels
    same = image_to_canvas(png_bytes(render_ink(ink, size=SIZE)), SIZE) > 0.35
    assert (same == rendered).all()


@pytest.mark.parametrize("kind", ["inverted", "gray-alpha", "rgba-white-ink", "rgb", "mode-1", "jpeg-noisy"])
def test_any_mode_and_polarity_gives_the_same_ink(page, kind):
    ref = _reference(page) > 0.35
    ink = 255 - page  # ink strength
    if kind == "inverted":
        data = _png(255 - page)
    elif kind == "gray-alpha":  # black everywhere, the ink in the alpha channel
        data = _png(np.stack([np.zeros_like(page), ink], -1), "LA")
    elif kind == "rgba-white-ink":  # white strokes on a transparent background
        data = _png(np.stack([np.full_like(page, 255)] * 3 + [ink], -1), "RGBA")
    elif kind == "rgb":
        data = _png(np.stack([page, page, (page * 0.9).astype(np.uint8)], -1))
    elif kind == "mode-1":
        buf = io.BytesIO()
        Image.fromarray(page).convert("1").save(buf, format="PNG")
        data = buf.getvalue()
    else:  # a photo: grey uneven paper, sensor noise, JPEG
        rng = np.random.default_rng(0)
        light = np.linspace(150, 230, page.shape[1])[None, :]
        photo = light * (page / 255.0) + rng.normal(0, 6, page.shape)
        buf = io.BytesIO()
        Image.fromarray(np.clip(photo, 0, 255).astype(np.uint8)).save(buf, format="JPEG", quality=70)
        data = buf.getvalue()
    got = image_to_canvas(data, SIZE, binarize=kind == "jpeg-noisy") > 0.35
    assert _within_a_pixel(got, ref) > 0.85


def test_blank_and_broken_images_are_refused_with_a_reason(page, tmp_path):
    full = _png(page)
    cases = {
        b"": "empty file",
        b"this is a text file, named .png": "not an image",
        full[: len(full) // 2]: "truncated or corrupt",
        _png(np.full((50, 200), 255, np.uint8)): "no ink",
        _png(np.full((50, 200), 0, np.uint8)): "no ink",
    }
    for data, reason in cases.items():
        with pytest.raises(ImageError, match=reason):
            image_to_canvas(data, SIZE)


def _bomb(w: int, h: int) -> bytes:
    """A valid PNG header for a w x h grey image with a tiny (highly compressed) body."""
    def chunk(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))

    row = b"\x00" + b"\xff" * w
    body = zlib.compress(row * 16, 9)  # only 16 rows: the decoder never gets that far
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", body) + chunk(b"IEND", b""))


@pytest.mark.parametrize("side", [13000, 20000])
def test_decompression_bombs_are_refused_before_decoding(side):
    data = _bomb(side, side)
    assert len(data) < 100_000 and side * side > MAX_PIXELS
    with pytest.raises(ImageError, match="exceeds the limit|decompression bomb"):
        image_to_canvas(data, SIZE)


def test_a_strip_image_is_refused_by_its_shape_not_as_blank():
    import io

    from PIL import Image

    from datasets_prep.image_intake import ImageError, decode

    buf = io.BytesIO()
    Image.new("L", (100_000, 1), 0).save(buf, format="PNG")
    with pytest.raises(ImageError, match="times longer than it is wide"):
        decode(buf.getvalue())
