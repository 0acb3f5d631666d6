"""One image, one checkpoint, one decoder: the same LaTeX alone, in any batch, at any batch size, for
every sampler of every recognizer (the re-mask draws come from the seed alone: model/sampler_noise.py)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from builders import tiny_model
from model import DecodeSpec
from model.onnx_samplers import remask
from model.sampler_noise import remask_noise

SPECS = {"diffusion": [DecodeSpec("remask", T=10, seed=3), DecodeSpec("remask-keep", T=10, seed=3),
                       DecodeSpec("mask-predict", T=10), DecodeSpec("remask", T=1)],
         "ar": [DecodeSpec("greedy"), DecodeSpec("beam", beam=3)],
         "posformer": [DecodeSpec("greedy")],
         "hvt": [DecodeSpec("greedy")]}


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_a_reading_does_not_depend_on_its_batch(kind):
    torch.manual_seed(0)
    model = tiny_model(kind).eval()
    images = (torch.rand(7, 1, 32, 64, generator=torch.Generator().manual_seed(5)) > 0.6).float()
    for spec in SPECS[kind]:
        alone = [model.recognize(images[i:i + 1], spec)[0] for i in range(len(images))]
        together = model.recognize(images, spec)
        reversed_ = model.recognize(images.flip(0), spec)[::-1]
        pairs = model.recognize(images[:4], spec) + model.recognize(images[4:], spec)
        assert alone == together == reversed_ == pairs, spec.name


def test_the_draws_are_the_seeds_alone():
    a = remask_noise(7, 10, 12)
    assert a.shape == (10, 12) and a.dtype == np.float32 and ((0 <= a) & (a < 1)).all()
    assert np.array_equal(a, remask_noise(7, 10, 12)) and not np.array_equal(a, remask_noise(8, 10, 12))


def test_the_numpy_sampler_draws_what_pytorch_draws():
    """The exported model's loop re-masks the same positions as model/gryphone/diffusion.py at any batch size."""
    from model.gryphone.diffusion import SATDecoder, sample_remask

    torch.manual_seed(0)
    dec = SATDecoder(20, 7, 12, 32, 2, 2, 32).eval()
    mem_kv = dec.memory_kv(torch.randn(3, 5, 32))

    def step(sym, mod):
        with torch.no_grad():
            out = dec(torch.from_numpy(sym), torch.from_numpy(mod), mem_kv)
        return out["sym"].numpy(), out["mod"].numpy()

    for keep in (False, True):
        want = sample_remask(dec, mem_kv, 10, 4, keep_visible=keep)
        got = remask(step, 3, 12, 10, 4, keep)
        assert np.array_equal(got[0], want[0].numpy()) and np.array_equal(got[1], want[1].numpy())
