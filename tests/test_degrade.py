"""train.degrade: the identity when off, deterministic draws, each effect doing what it says, images the
intake could produce, clear errors."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from train.config import apply_overrides, from_dict, preset
from train.degrade import DegradeConfig, _blur, degrade_batch


def strokes(b: int = 4, h: int = 32, w: int = 128) -> torch.Tensor:
    """Binary ink: a 1-px and a 3-px vertical stroke and a 2-px horizontal one, as a 1-bit shard holds."""
    img = torch.zeros(b, 1, h, w)
    img[:, :, 4:28, 20] = 1
    img[:, :, 4:28, 60:63] = 1
    img[:, :, 16:18, 80:120] = 1
    return img


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def only(effect: str, **kw) -> DegradeConfig:
    """Every image degraded, by one effect alone."""
    base = dict(prob=1.0, p_stroke=0.0, p_blur=0.0, p_noise=0.0)
    base.update({f"p_{effect}": 1.0, **kw})
    return DegradeConfig(**base)


def test_off_is_the_identity_and_so_are_zero_effects():
    img = strokes()
    assert degrade_batch(img, DegradeConfig(), gen(0)) is img
    nothing = DegradeConfig(prob=1.0, p_stroke=0.0, p_blur=0.0, p_noise=0.0)
    assert torch.equal(degrade_batch(img, nothing, gen(0)), img)


def test_draws_repeat_with_the_generator():
    img, cfg = strokes(), DegradeConfig(prob=1.0, p_stroke=1.0, p_blur=1.0, p_noise=1.0)
    assert torch.equal(degrade_batch(img, cfg, gen(3)), degrade_batch(img, cfg, gen(3)))
    assert not torch.equal(degrade_batch(img, cfg, gen(3)), degrade_batch(img, cfg, gen(4)))


def test_images_not_picked_come_back_exactly():
    img = strokes(b=64)
    out = degrade_batch(img, DegradeConfig(prob=0.5, p_noise=1.0), gen(1))
    same = (out == img).flatten(1).all(1)
    assert 10 < int(same.sum()) < 54  # about half left alone, the rest changed


def test_dilation_thickens_and_erosion_thins():
    img = strokes()
    grown = degrade_batch(img, only("stroke", stroke=(1.0, 1.0)), gen(0))
    thinned = degrade_batch(img, only("stroke", stroke=(-1.0, -1.0)), gen(0))
    assert grown.sum() > img.sum() > thinned.sum()
    assert torch.equal(grown[0, 0, 4:28, 19:22], torch.ones(24, 3))  # the 1-px stroke now 3 px wide
    assert thinned[0, 0, 10, 61] == 1 and thinned[0, 0, 10, 60] == 0  # the 3-px one now 1 px wide


def test_blur_spreads_the_ink_and_the_darkest_ink_is_one_again():
    img = strokes()
    out = degrade_batch(img, only("blur", blur=(1.0, 1.0)), gen(0))
    assert out[0, 0, 10, 21] > 0 and out[0, 0, 10, 20] < 1        # the 1-px stroke spread out
    assert torch.allclose(out.amax(dim=(1, 2, 3)), torch.ones(4))  # as the intake scales it
    assert torch.equal(out[0, 0, :, :10], torch.zeros(32, 10))       # far paper stays paper


def test_blur_widths_are_per_image():
    img = strokes(b=3)
    out = _blur(img, torch.tensor([0.0, 0.5, 2.0]), 2.0)
    assert torch.equal(out[0], img[0])
    assert out[1, 0, 10, 20] > out[2, 0, 10, 20]  # the wider blur leaves less at the centre


def test_noise_lands_in_the_ink_and_leaves_the_paper_clean():
    img = strokes(b=2)
    out = degrade_batch(img, only("noise", noise=(12.0, 12.0)), gen(0))
    assert torch.equal(out[img == 0], torch.zeros(int((img == 0).sum())))
    ink = out[img == 1]
    assert float(ink.max()) == 1.0 and 0.85 < float(ink.min()) < 1.0 and float(ink.std()) > 0.01


def test_the_paper_floor_is_a_setting():
    img = strokes(b=1) * 0.5 + 0.1 * (strokes(b=1) == 0)  # paper at 0.1, ink at 0.5
    noisy = dict(prob=1.0, p_stroke=0.0, p_blur=0.0, p_noise=1.0, noise=(10.0, 10.0))
    clean = degrade_batch(img, DegradeConfig(**noisy), gen(0))                 # 0.1 < 0.15: paper
    grainy = degrade_batch(img, DegradeConfig(**noisy, floor=0.05), gen(0))   # 0.1 >= 0.05: ink
    paper = strokes(b=1) == 0
    assert len(torch.unique(clean[paper])) == 1 and len(torch.unique(grainy[paper])) > 100


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), b=st.integers(1, 5))
def test_output_stays_an_image(seed, b):
    img = strokes(b=b)
    cfg = DegradeConfig(prob=1.0, p_stroke=0.5, p_blur=0.5, p_noise=0.5, blur=(0.0, 3.0))
    out = degrade_batch(img, cfg, gen(seed))
    assert out.shape == img.shape and out.dtype == img.dtype
    assert float(out.min()) >= 0.0 and float(out.max()) <= 1.0


@pytest.mark.parametrize("bad", [dict(prob=1.5), dict(blur=(0.0, 4.0)), dict(stroke=(0.5, -0.5)),
                                 dict(floor=1.0), dict(p_noise=-0.1), dict(noise=(-1.0, 2.0))])
def test_bad_settings_name_themselves(bad):
    with pytest.raises(ValueError, match="degrade"):
        DegradeConfig(**bad)


def test_overrides_and_stored_configs():
    cfg = apply_overrides(preset("micro"), ["degrade.prob=0.5", "degrade.blur=0.2,0.8", "degrade.p_blur=1"])
    assert cfg.degrade.prob == 0.5 and cfg.degrade.blur == (0.2, 0.8)
    bad = apply_overrides(preset("micro"), ["degrade.prob=2"])  # overrides bypass __post_init__
    with pytest.raises(ValueError, match="degrade"):
        bad.degrade.validate()
    from dataclasses import asdict
    stored = asdict(cfg)
    assert from_dict(stored).degrade == cfg.degrade
    stored.pop("degrade")  # a checkpoint written before the group existed
    assert from_dict(stored).degrade == DegradeConfig()
