"""HVT (model/hvt/recognizer.py): positions, coverage, the [CLS] initial state, decoding, shapes, checkpoints and
an overfit check that the decoder reads the image. Tiny models only: the whole file runs in seconds."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch
import torch.nn as nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

import model
from datasets_prep.render_spec import RenderSpec
from model.checkpoint import save_checkpoint
from model.hvt.decoder import EOS, PAD, CoverageAttention, coverage_penalty, lstm_step
from model.search import greedy, search_ids
from model.errors import RecognizerConfigError
from model.hvt.recognizer import HVT, HVTConfig, position_encoding
from model.layers import sincos_1d
from model.recognizer import DecodeSpec
from model.registry import config_from_dict
from tokenizer.label_spec import LabelSpec
from train.config import apply_overrides, preset

LABELS = ["x^2", "a+b", "\\frac{1}{y}", "z_3"]


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


def tiny_cfg(**kw) -> HVTConfig:
    base = dict(res_channels=(8, 16, 16, 16), res_blocks=(1, 1, 1, 1), enc_dim=32, enc_depth=1, enc_heads=2,
                dec_dim=48, emb_dim=24, attn_dim=24, cov_kernel=3, cov_channels=4, max_len=12, dropout=0.0)
    base.update(kw)
    return HVTConfig(**base)


def tiny(size=(32, 64), seed: int = 0, **kw) -> HVT:
    torch.manual_seed(seed)
    return model.build(tiny_cfg(**kw), RenderSpec(size), LabelSpec.build("token", LABELS)).eval()


def token_batch(m: HVT, labels: list[str]) -> dict[str, torch.Tensor]:
    return {"tokens": torch.from_numpy(np.stack([m.targets(t)["tokens"] for t in labels]))}


def test_2d_positions_are_row_and_column_encodings():
    h, w, d = 3, 5, 16
    pe = position_encoding((h, w), d, two_d=True)
    assert pe.shape == (h * w, d)
    grid = pe.view(h, w, d)
    rows, cols = sincos_1d(h, d // 2), sincos_1d(w, d // 2)
    for r in range(h):
        for c in range(w):
            assert torch.equal(grid[r, c, : d // 2], rows[r]) and torch.equal(grid[r, c, d // 2:], cols[c])
    assert torch.equal(position_encoding((h, w), d, two_d=False), sincos_1d(h * w, d))
    m = tiny()
    assert torch.equal(m.encoder.pos_embed[0], position_encoding(m.encoder.grid, 32, True))
    assert torch.equal(tiny(pos_2d=False).encoder.pos_embed[0], sincos_1d(m.encoder.grid[0] * m.encoder.grid[1], 32))


@pytest.mark.parametrize("size,grid", [((64, 256), (4, 32)), ((96, 384), (6, 48))])
def test_encoder_output_shape(size, grid):
    m = tiny(size)
    assert m.encoder.grid == grid
    with torch.no_grad():
        out = m.encoder(torch.rand(2, 1, *size))
    assert out.shape == (2, 1 + grid[0] * grid[1], 32)


def test_coverage_is_the_sum_of_past_attention():
    m = tiny()
    with torch.no_grad():
        memory, state = m.start(torch.rand(3, 1, 32, 64))
        assert torch.equal(state.coverage, torch.zeros_like(state.coverage))
        tokens, maps = torch.full((3,), 1), []
        for _ in range(4):
            logits, state, alpha = m.decoder.step(tokens, state, memory)
            maps.append(alpha)
            torch.testing.assert_close(state.coverage, torch.stack(maps).sum(0))
            torch.testing.assert_close(alpha.sum(-1), torch.ones(3))
            tokens = logits.argmax(-1)
        # the coverage enters the score: another coverage gives other attention
        _, _, again = m.decoder.step(tokens, state, memory)
        _, _, other = m.decoder.step(tokens, state._replace(coverage=torch.zeros_like(state.coverage)), memory)
        assert not torch.allclose(again, other)
        assert tiny(coverage=False).decoder.attn.cov_conv is None


@pytest.mark.parametrize("grid, kernel", [((4, 16), 5), ((3, 7), 3), ((2, 5), 11)])
def test_coverage_term_is_convolution_then_projection(grid, kernel):
    """The composed form (one product over unfolded neighbourhoods) computes V conv(coverage), values
    and gradients, as the two layers it stands for."""
    torch.manual_seed(0)
    attn = CoverageAttention(8, 8, 16, grid, kernel, 6, coverage=True)
    cov = torch.rand(3, grid[0] * grid[1], requires_grad=True)
    plain = attn.cov_proj(attn.cov_conv(cov.view(-1, 1, *grid)).flatten(2).transpose(1, 2))
    fast = attn.coverage_term(cov)
    torch.testing.assert_close(fast, plain, rtol=1e-5, atol=1e-6)
    weights = torch.randn_like(plain)
    params = [cov, attn.cov_conv.weight, attn.cov_conv.bias, attn.cov_proj.weight]
    g_plain = torch.autograd.grad((plain * weights).sum(), params)
    g_fast = torch.autograd.grad((fast * weights).sum(), params)
    for a, b in zip(g_fast, g_plain):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_coverage_penalty_counts_attention_put_again():
    once = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])     # two steps, two places: no overlap
    twice = torch.tensor([[[1.0, 0.0], [1.0, 0.0]]])    # the same place twice
    valid = torch.ones(1, 2, dtype=torch.bool)
    assert coverage_penalty(once, valid).item() == 0.0
    assert coverage_penalty(twice, valid).item() == pytest.approx(0.5)


def _h0_change_from_cls(m: HVT) -> float:
    images = torch.rand(2, 1, 32, 64)
    with torch.no_grad():
        h0 = m.start(images)[1].h
        hook = m.encoder.register_forward_hook(lambda mod, args, out: torch.cat([out[:, :1] + 1.0, out[:, 1:]], 1))
        h0_changed = m.start(images)[1].h
        hook.remove()
    return (h0 - h0_changed).abs().max().item()


def test_cls_output_reaches_the_initial_state_only_with_cls_init():
    assert _h0_change_from_cls(tiny(cls_init=True)) > 1e-4
    assert _h0_change_from_cls(tiny(cls_init=False)) == 0.0


def test_beam_of_one_is_greedy():
    m = tiny(max_len=10)
    with torch.no_grad():
        images = torch.rand(4, 1, 32, 64)
        memory, state = m.start(images)
        assert torch.equal(search_ids(m.token_steps(images), 1), greedy(lstm_step(m.decoder, memory, state), 4, 10, "cpu"))
        wide = search_ids(m.token_steps(images), 3)
    assert wide.shape[0] == 4 and wide.shape[1] <= 10 and (wide[:, 0] == 1).all()


def test_state_dict_and_checkpoint_round_trip(tmp_path):
    m = tiny()
    cfg = config_from_dict(json.loads(json.dumps(dataclasses.asdict(m.cfg))))
    assert cfg == m.cfg and isinstance(cfg, HVTConfig)
    assert HVTConfig(res_strides=((1, 1), (2, 2), (2, 2), (2, 1))) == HVTConfig()
    labels, render = m.labels, m.render
    save_checkpoint(tmp_path / "hvt.pt", {"train_config": {}, "model_config": dataclasses.asdict(m.cfg),
                                          "render": render.to_dict(), "labels": labels.to_dict(),
                                          "model": m.state_dict(), "step": 3})
    other = model.build(cfg, RenderSpec((32, 64)), labels)
    other.load_state_dict(m.state_dict())
    loaded = model.load(tmp_path / "hvt.pt").recognizer
    images = torch.rand(2, 1, 32, 64)
    for copy in (other.eval(), loaded):
        assert isinstance(copy, HVT)
        torch.testing.assert_close(copy.encoder(images), m.encoder(images))
        assert torch.equal(copy.decode_ids(images, DecodeSpec("greedy")), m.decode_ids(images, DecodeSpec("greedy")))


def test_command_line_overrides():
    cfg = apply_overrides(preset("micro"), ["model.kind=hvt", "model.res_strides=1x1,2x2,2x1,2x1",
                                            "model.res_channels=8,16,16,16", "model.cls_init=false"]).model
    assert isinstance(cfg, HVTConfig) and cfg.stage_strides() == ((1, 1), (2, 2), (2, 1), (2, 1))
    assert cfg.res_channels == (8, 16, 16, 16) and not cfg.cls_init
    assert model.build(cfg, RenderSpec((32, 64)), LabelSpec.build("token", LABELS)).encoder.grid == (2, 16)


def test_bad_settings_are_named():
    for bad in (dict(cov_kernel=4), dict(res_blocks=(1, 1)), dict(res_strides=(1, 1, 2, 2, 2, 2, 2)),
                dict(enc_dim=34)):
        with pytest.raises(RecognizerConfigError):
            tiny(**bad)


def test_flops_count_every_convolution():
    m = tiny((64, 256))
    counted = []

    def count(conv: nn.Conv2d, args, out):
        counted.append(2.0 * out[0].numel() * conv.in_channels * conv.kernel_size[0] * conv.kernel_size[1])

    hooks = [c.register_forward_hook(count) for c in m.encoder.backbone.modules() if isinstance(c, nn.Conv2d)]
    with torch.no_grad():
        m.encoder.backbone(torch.rand(1, 1, 64, 256))
    for h in hooks:
        h.remove()
    conv, grid = m.encoder.backbone.flops((64, 256))
    assert grid == (4, 32) and conv == pytest.approx(sum(counted))
    assert m.flops_per_image(train=True) == pytest.approx(3 * m.flops_per_image(train=False))
    assert m.flops_per_image(False) > conv


@pytest.mark.parametrize("kw", [dict(), dict(coverage=False, pos_2d=False),
                                dict(enc_dim=64, enc_heads=4, dec_dim=96, attn_dim=64, cov_kernel=5, cov_channels=8)])
def test_flops_per_image_agrees_with_torch_s_flop_counter(kw):
    """The MFU formula against torch's count of one teacher-forced forward over a full-length label."""
    m = tiny((64, 128), max_len=20, **kw)
    batch = {"tokens": torch.randint(4, len(m.labels.vocab.tokens), (1, 20))}
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        m.loss(torch.rand(1, 1, 64, 128), batch, torch.Generator())
    assert m.flops_per_image(train=True) / 3 == pytest.approx(counter.get_total_flops(), rel=1e-3)


def test_overfits_four_images_and_reads_them():
    m = tiny(seed=1).train()
    g = torch.Generator().manual_seed(0)
    images = (torch.rand(4, 1, 32, 64, generator=g) > 0.7).float()
    batch = token_batch(m, LABELS)
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    losses = []
    for _ in range(80):
        out = m.loss(images, batch, g)
        opt.zero_grad()
        out["loss"].backward()
        opt.step()
        losses.append(out["ce"].item())
    assert losses[-1] < 0.1 * losses[0]
    m.eval()
    assert m.recognize(images, DecodeSpec("greedy")) == LABELS
    assert m.recognize(images, DecodeSpec("beam", beam=3)) == LABELS
    perm = [2, 0, 3, 1]
    shuffled = m.recognize(images[perm], DecodeSpec("greedy"))
    assert shuffled == [LABELS[i] for i in perm] and shuffled != LABELS
    ids = m.decode_ids(images, DecodeSpec("greedy"))
    assert ((ids == EOS).sum(1) == 1).all() and (ids[:, 0] == 1).all()
    assert all(PAD not in row[: row.index(EOS)] for row in ids.tolist())
