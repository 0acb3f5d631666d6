"""train.augment: the identity when off, deterministic draws, ink kept on the canvas, clear errors."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from train.augment import AugmentConfig, augment_batch
from train.config import apply_overrides, preset


def boxes(b: int = 6, h: int = 64, w: int = 256, margin: int = 8) -> torch.Tensor:
    """Ink outlines filling the canvas up to the converter's margin: the hardest case to keep inside."""
    img = torch.zeros(b, 1, h, w)
    img[:, :, margin:h - margin, margin:margin + 2] = 1
    img[:, :, margin:h - margin, w - margin - 2:w - margin] = 1
    img[:, :, margin:margin + 2, margin:w - margin] = 1
    img[:, :, h - margin - 2:h - margin, margin:w - margin] = 1
    return img


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_off_is_the_identity_and_so_are_neutral_draws():
    img = boxes()
    assert augment_batch(img, AugmentConfig(), gen(0)) is img
    neutral = AugmentConfig(prob=1.0, scale=(1.0, 1.0), aspect=0.0, rotate=0.0, shear=0.0)
    assert torch.allclose(augment_batch(img, neutral, gen(0)), img, atol=1e-4)


def test_the_same_generator_seed_gives_the_same_batch():
    img, cfg = boxes(), AugmentConfig(prob=1.0)
    assert torch.equal(augment_batch(img, cfg, gen(3)), augment_batch(img, cfg, gen(3)))
    assert not torch.equal(augment_batch(img, cfg, gen(3)), augment_batch(img, cfg, gen(4)))


def test_prob_chooses_which_images_change():
    img = boxes(64)
    out = augment_batch(img, AugmentConfig(prob=0.5), gen(1))
    changed = (out - img).abs().flatten(1).amax(1) > 1e-3
    assert 16 <= int(changed.sum()) <= 48  # about half of 64
    assert torch.equal(out[~changed], img[~changed])


@pytest.mark.parametrize("seed", range(5))
def test_ink_filling_the_canvas_stays_on_it(seed):
    img = boxes(16)
    out = augment_batch(img, AugmentConfig(prob=1.0), gen(seed))
    border = torch.ones_like(out, dtype=torch.bool)
    border[:, :, 2:-2, 2:-2] = False
    assert out[border].max() < 0.05  # nothing reaches the outer 2 px: no symbol is cut off
    for o in out[:, 0]:  # the whole outline is still there: its extent is the shrink of the original's
        cols, rows = (o > 0.2).any(0).nonzero()[:, 0], (o > 0.2).any(1).nonzero()[:, 0]
        assert 0.65 * 240 <= cols.max() - cols.min() + 1 <= 252 and 0.55 * 48 <= rows.max() - rows.min() + 1 <= 60


@given(st.floats(0.3, 1.0), st.floats(0.0, 0.3), st.floats(0.0, 5.0), st.floats(0.0, 0.3), st.integers(0, 2**31))
@settings(max_examples=25, deadline=None)
def test_any_setting_keeps_shape_range_and_device(lo, aspect, rotate, shear, seed):
    img = boxes(3, 32, 128, 4)
    out = augment_batch(img, AugmentConfig(prob=1.0, scale=(lo, 1.0), aspect=aspect, rotate=rotate, shear=shear),
                        gen(seed))
    assert out.shape == img.shape and out.dtype == img.dtype
    assert out.min() >= 0.0 and out.max() <= 1.0 + 1e-6


def test_bad_settings_are_clear_errors():
    with pytest.raises(ValueError, match="augment"):
        AugmentConfig(prob=1.0, scale=(0.5, 1.2))  # enlarging could push symbols off the canvas
    cfg = apply_overrides(preset("micro"), ["augment.prob=2"])  # overrides bypass __post_init__
    with pytest.raises(ValueError, match="augment"):
        cfg.augment.validate()
