"""Unit tests of the model: masking statistics, loss/KL normalization, sampler invariants, AR caching."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from builders import sat_labels, tiny_cfg, tiny_model
from datasets_prep.render_spec import RenderSpec
from model import DecodeSpec, GryphOneConfig, LossConfig, build, load_vit_checkpoint
from model.ar.decoder import BOS, EOS
from model.gryphone.diffusion import MASK, PAD, SATDecoder, _kl_per_position, diffusion_loss, mask_view, sample_mask_predict, sample_remask
from model.encoder import ViTEncoder
from model.sampler_noise import remask_noise


def test_mask_view_statistics_and_alignment():
    g = torch.Generator().manual_seed(0)
    sym = torch.randint(3, 20, (4000, 50), generator=g)
    mod = torch.randint(3, 7, (4000, 50), generator=g)
    T = 50
    msym, mmod, mask = mask_view(sym, mod, T, g)
    # both streams masked at exactly the same positions, with the MASK id, others untouched
    assert torch.equal(msym == MASK, mask) and torch.equal(mmod == MASK, mask)
    assert torch.equal(msym[~mask], sym[~mask]) and torch.equal(mmod[~mask], mod[~mask])
    # E[t/T] for t ~ U{1..T} is (T+1)/(2T)
    assert abs(mask.float().mean().item() - (T + 1) / (2 * T)) < 0.01
    # per-sample rates spread over (0, 1]: the forward process has one rate per sample
    rates = mask.float().mean(1)
    assert rates.min() < 0.1 and rates.max() > 0.9
    # a sample's rate is constant across its positions: variance across positions matches Bernoulli(rate)
    hi = rates > 0.5
    assert hi.sum() > 1000


def test_kl_is_per_position_not_summed():
    torch.manual_seed(0)
    p, q = torch.randn(3, 40, 9), torch.randn(3, 40, 9)
    kl = _kl_per_position(p, q)
    ref = F.kl_div(F.log_softmax(q, -1), F.log_softmax(p, -1), log_target=True, reduction="none").sum(-1)
    assert kl.shape == (3, 40)
    assert torch.allclose(kl, ref, atol=1e-5)
    assert (kl >= -1e-6).all()
    assert _kl_per_position(p, p).abs().max() < 1e-5


def _loss_parts(length: int, rmml: bool = True, pad_weight: float = 1.0):
    torch.manual_seed(0)
    dec = SATDecoder(20, 7, length, 32, 1, 2, 32)
    mem_kv = dec.memory_kv(torch.randn(2, 5, 32))
    sym = torch.randint(3, 20, (2, length))
    sym[:, length // 2:] = PAD
    mod = torch.randint(3, 7, (2, length)).masked_fill(sym == PAD, PAD)
    cfg = LossConfig(T=10, rmml=rmml, pad_weight=pad_weight)
    return diffusion_loss(dec, mem_kv, sym, mod, cfg, torch.Generator().manual_seed(1)), dec


def test_loss_parts_and_rmml_sum():
    parts, _ = _loss_parts(16)
    assert set(parts) >= {"loss", "ce", "kl", "ce_sym_real", "ce_sym_pad", "ce_mod_real", "ce_mod_pad"}
    # loss = CE(view1) + CE(view2) + KL terms: ce is the mean per view, so 2*ce + kl
    assert torch.allclose(parts["loss"].detach(), 2 * parts["ce"] + parts["kl"], atol=1e-5)
    # near-uniform predictions at init: CE per head close to log(vocab)
    assert abs(parts["ce_sym_real"].item() - math.log(20)) < 0.7
    single, _ = _loss_parts(16, rmml=False)
    assert "kl" not in single and torch.allclose(single["loss"].detach(), single["ce"], atol=1e-6)


def test_kl_term_does_not_grow_with_window_length():
    short, _ = _loss_parts(16)
    long, _ = _loss_parts(128)
    # a sum over positions would make the long window's KL ~8x larger
    assert long["kl"].item() < 3 * short["kl"].item()


def test_pad_weight_zero_ignores_pad_positions():
    parts, _ = _loss_parts(16, rmml=False, pad_weight=0.0)
    expected = parts["ce_sym_real"] + parts["ce_mod_real"]
    assert torch.allclose(parts["ce"], expected, atol=1e-5)


class CountingDecoder(torch.nn.Module):
    """Wraps a SATDecoder and counts forward calls."""

    def __init__(self, inner):
        super().__init__()
        self.inner, self.calls, self.max_len = inner, 0, inner.max_len

    def forward(self, *a):
        self.calls += 1
        return self.inner(*a)


@pytest.mark.parametrize("T", [1, 4, 10])
def test_remask_sampler_invariants(T):
    torch.manual_seed(0)
    dec = SATDecoder(20, 7, 12, 32, 2, 2, 32).eval()
    mem_kv = dec.memory_kv(torch.randn(3, 5, 32))
    counting = CountingDecoder(dec)
    sym, mod = sample_remask(counting, mem_kv, T, 0)
    assert counting.calls == T
    assert not (sym == MASK).any() and not (mod == MASK).any()
    # PAD is absorbing: nothing but PAD after the first PAD
    after = (sym == PAD).cumsum(1) > 0
    assert (sym[after] == PAD).all() and (mod[after] == PAD).all()
    again = sample_remask(dec, mem_kv, T, 0)
    assert torch.equal(again[0], sym) and torch.equal(again[1], mod)


def test_one_step_equals_argmax_of_all_mask_input():
    torch.manual_seed(0)
    dec = SATDecoder(20, 7, 12, 32, 2, 2, 32).eval()
    mem_kv = dec.memory_kv(torch.randn(2, 5, 32))
    full = torch.full((2, 12), MASK)
    out = dec(full, full, mem_kv)
    sym, mod = sample_remask(dec, mem_kv, 1)
    logits = out["sym"].clone()
    logits[..., MASK] = float("-inf")  # MASK is never predicted
    ref = logits.argmax(-1)
    after = (ref == PAD).cumsum(1) > 0
    assert torch.equal(sym, ref.masked_fill(after, PAD))
    mp_sym, _ = sample_mask_predict(dec, mem_kv, 1)
    assert torch.equal(mp_sym, sym)


def test_mask_predict_invariants_and_history():
    torch.manual_seed(0)
    dec = SATDecoder(20, 7, 12, 32, 2, 2, 32).eval()
    mem_kv = dec.memory_kv(torch.randn(3, 5, 32))
    history: list = []
    sym, mod = sample_mask_predict(dec, mem_kv, 5, history=history)
    assert len(history) == 5
    assert not (sym == MASK).any()
    after = (sym == PAD).cumsum(1) > 0
    assert (sym[after] == PAD).all()
    # number of masked positions decreases over the iterations
    masked_counts = [int((h[0] == MASK).sum()) for h in history]
    assert masked_counts[-1] == 0


def test_models_train_step_and_recognize_shapes():
    for kind in ("diffusion", "ar"):
        model = tiny_model(kind, **({"forest_depths": 4} if kind == "diffusion" else {}))
        images = torch.rand(2, 1, 32, 64)
        if kind == "diffusion":
            batch = {"symbols": torch.randint(3, 20, (2, 12)), "modifiers": torch.randint(3, 7, (2, 12)),
                     "level": torch.randint(0, 4, (2, 12)), "relation": torch.randint(0, 3, (2, 12))}
            model.cfg.loss.forest_weight = 0.5
        else:
            batch = {"tokens": torch.cat([torch.full((2, 1), BOS), torch.randint(3, 15, (2, 10)),
                                          torch.full((2, 1), EOS)], 1)}
        parts = model(images, batch, torch.Generator().manual_seed(0))
        parts["loss"].backward()
        assert all(p.grad is not None for p in model.parameters() if p.requires_grad)
        model.eval()
        out = model.decode_sat(images, DecodeSpec("remask")) if kind == "diffusion" else \
            model.decode_ids(images, DecodeSpec("greedy"))
        assert len(model.recognize(images)) == 2
        if kind == "diffusion":
            assert out[0].shape == (2, 12) and "forest" in parts
        else:
            assert out.shape[0] == 2 and (out[:, 0] == BOS).all()


def test_beam_search_returns_valid_sequences():
    torch.manual_seed(0)
    model = tiny_model("ar").eval()
    out = model.decode_ids(torch.rand(2, 1, 32, 64), DecodeSpec("beam", beam=3))
    assert (out[:, 0] == BOS).all()
    assert out.shape[1] <= model.cfg.max_len


def test_encoder_any_grid_and_timm_checkpoint_loading(tmp_path):
    enc = ViTEncoder((32, 48), 8, 32, 2, 2)
    assert enc(torch.rand(1, 1, 32, 48)).shape == (1, 4 * 6, 32)
    # a timm-style state dict (qkv fused, RGB patch kernel) built from another encoder's weights
    src = ViTEncoder((32, 48), 8, 32, 2, 2)
    timm = {"cls_token": torch.zeros(1, 1, 32), "pos_embed": torch.zeros(1, 25, 32),
            "patch_embed.proj.weight": src.patch_embed.weight.repeat(1, 3, 1, 1) / 3,
            "patch_embed.proj.bias": src.patch_embed.bias}
    for k, v in src.state_dict().items():
        if ".attn.q." in k:
            kind = k.rsplit(".", 1)[1]
            prefix = k.split(".attn.q.")[0]
            timm[f"{prefix}.attn.qkv.{kind}"] = torch.cat([v, src.state_dict()[f"{prefix}.attn.kv.{kind}"]])
        elif ".attn.kv." not in k and not k.startswith("patch_embed"):
            timm[k] = v
    torch.save({"model": timm}, tmp_path / "dino.pth")
    unused = load_vit_checkpoint(enc, tmp_path / "dino.pth")
    assert set(unused) == {"cls_token", "pos_embed"}
    x = torch.rand(2, 1, 32, 48)
    assert torch.allclose(enc(x), src(x), atol=1e-5)
    (tmp_path / "bad.pth").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="bad.pth"):
        load_vit_checkpoint(enc, tmp_path / "bad.pth")


def _counted_forward_flops(model, images, batch) -> float:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    # the math attention path, so the score and value products are matmuls the counter sees
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        model.loss(images, batch, torch.Generator().manual_seed(0))
    return float(counter.get_total_flops())


@pytest.mark.parametrize("kind", ["diffusion", "ar"])
def test_flops_per_image_agrees_with_torch_s_flop_counter(kind):
    """The MFU formula against torch's own count of one training forward (both RMML views), at the
    paper's encoder width over a reduced canvas and depth so the count runs in a second."""
    torch.manual_seed(0)
    kw = dict(patch=8, enc_dim=384, enc_depth=2, enc_heads=6, dec_dim=384, dec_depth=2, dec_heads=8, max_len=40)
    labels = sat_labels(120, 60) if kind == "diffusion" else None
    model = tiny_model(kind, canvas=(64, 128), labels=labels, **kw)
    images = torch.rand(1, 1, 64, 128)
    if kind == "diffusion":
        batch = {"symbols": torch.randint(3, 120, (1, 40)), "modifiers": torch.randint(3, 60, (1, 40))}
    else:
        batch = {"tokens": torch.randint(4, 15, (1, 41))}
    counted = _counted_forward_flops(model, images, batch)
    formula = model.flops_per_image(train=True) / 3
    assert abs(formula - counted) / counted < 0.05, (formula, counted)


def test_paper_preset_flops_per_image():
    """docs/training.md quotes the paper preset's training FLOPs per image (encoder forward ~44.6 G)."""
    from train.config import preset

    cfg = preset("paper").model  # ViT-S/8, the official 5-layer decoder, 150 positions, RMML
    model = build(cfg, RenderSpec((224, 224)), sat_labels(200, 100))
    from model.encoder import vit_flops

    enc, _ = vit_flops(cfg, (224, 224))
    assert abs(enc / 1e9 - 44.6) < 0.5
    assert abs(model.flops_per_image(train=True) / 1e9 - 158.3) < 1.0


def test_kl_scale_zero_leaves_only_the_two_ce_terms():
    torch.manual_seed(0)
    dec = SATDecoder(20, 7, 16, 32, 1, 2, 32)
    mem_kv = dec.memory_kv(torch.randn(2, 5, 32))
    sym = torch.randint(3, 20, (2, 16))
    mod = torch.randint(3, 7, (2, 16))
    parts = diffusion_loss(dec, mem_kv, sym, mod, LossConfig(T=10), torch.Generator().manual_seed(1), kl_scale=0.0)
    assert parts["kl"] > 0
    assert torch.allclose(parts["loss"].detach(), 2 * parts["ce"], atol=1e-6)


def test_decoder_position_tables_start_at_the_embedding_scale():
    from model.layers import position_table

    for init in ("random", "sincos"):
        t = position_table(64, 96, init)
        assert t.shape == (1, 64, 96)
        assert abs(float(t.std()) - 0.02) < 0.004
    s = position_table(64, 96, "sincos")[0]
    near = torch.nn.functional.cosine_similarity(s[10], s[11], dim=0)
    far = torch.nn.functional.cosine_similarity(s[10], s[40], dim=0)
    assert near > far  # neighbours start out similar: the point of the sin-cos start
    with pytest.raises(ValueError, match="unknown position init"):
        position_table(8, 16, "zeros")


def test_independent_masking_draws_each_stream_on_its_own():
    g = torch.Generator().manual_seed(0)
    sym = torch.randint(3, 20, (4000, 50), generator=g)
    mod = torch.randint(3, 7, (4000, 50), generator=g)
    msym, mmod, mask = mask_view(sym, mod, 10, g, mode="independent")
    ms, mm = msym == MASK, mmod == MASK
    assert torch.equal(ms, mask) and torch.equal(msym[~ms], sym[~ms]) and torch.equal(mmod[~mm], mod[~mm])
    assert not torch.equal(ms, mm)
    # t ~ U(0, 1): the overall rate is 1/2, per-sample rates cover (0, 1) continuously
    assert abs(ms.float().mean().item() - 0.5) < 0.02 and abs(mm.float().mean().item() - 0.5) < 0.02
    # the streams share t: a sample's two rates agree, though the positions differ
    assert torch.corrcoef(torch.stack([ms.float().mean(1), mm.float().mean(1)]))[0, 1] > 0.9
    assert len(torch.unique(ms.float().mean(1))) > 40  # not a handful of k/T levels
    with pytest.raises(ValueError, match="mask mode"):
        mask_view(sym, mod, 10, g, mode="sideways")


def test_detached_kl_sends_no_gradient_into_its_target():
    torch.manual_seed(0)
    p = torch.randn(2, 6, 9, requires_grad=True)
    q = torch.randn(2, 6, 9, requires_grad=True)
    _kl_per_position(p, q, detach_p=True).sum().backward()
    assert p.grad is None or p.grad.abs().max() == 0
    assert q.grad.abs().max() > 0
    p2, q2 = p.detach().clone().requires_grad_(), q.detach().clone().requires_grad_()
    _kl_per_position(p2, q2).sum().backward()
    assert p2.grad.abs().max() > 0  # without detach both sides learn
    assert torch.allclose(_kl_per_position(p, q, True), _kl_per_position(p, q))  # same value either way


class RandomDecoder(torch.nn.Module):
    """Fresh random logits on every call: any token a sampler keeps, it kept on purpose."""

    def __init__(self, n: int):
        super().__init__()
        self.max_len, self.g = n, torch.Generator().manual_seed(5)

    def forward(self, sym, mod, mem_kv):
        b, n = sym.shape
        return {"sym": torch.randn(b, n, 20, generator=self.g) + 3 * (torch.arange(20) >= 3),
                "mod": torch.randn(b, n, 7, generator=self.g)}


def test_keep_visible_sampler_changes_only_positions_it_masked():
    n, T = 12, 6
    mem_kv = [(torch.zeros(4, 1, 1, 1), torch.zeros(4, 1, 1, 1))]
    for keep in (True, False):
        history: list = []
        sample_remask(RandomDecoder(n), mem_kv, T, 3, history=history,
                      keep_visible=keep)
        replay = torch.from_numpy(remask_noise(3, T, n))  # the sampler's only draws: one row per step
        unchanged_where_visible = []
        for k in range(T - 1):
            remask = (replay[k] < (T - 1 - k) / T)[None].expand(4, n)
            prev, nxt = history[k][0], history[k + 1][0]
            live = (prev != PAD) & (nxt != PAD)
            unchanged_where_visible.append(bool((prev == nxt)[~remask & live].all()))
        assert all(unchanged_where_visible) == keep


def test_reader_loss_scores_the_label_and_its_end_only():
    from model.gryphone.aux_reader import SATCausalReader, reader_loss

    torch.manual_seed(0)
    reader = SATCausalReader(20, 7, 8, 32, 1, 2, 32)
    memory = torch.randn(2, 5, 32)
    sym = torch.tensor([[5, 6, 7, PAD, PAD, PAD, PAD, PAD], [5, 6, 7, 8, 9, PAD, PAD, PAD]])
    mod = torch.full_like(sym, 3).masked_fill(sym == PAD, PAD)
    base = reader_loss(reader, memory, sym, mod)
    # what follows the first PAD is never scored; the label positions are
    tail, tail_mod = sym.clone(), mod.clone()
    tail[0, 4:], tail_mod[0, 4:] = 9, 4  # row 0 ends at position 3: garbage after its first PAD
    assert torch.allclose(reader_loss(reader, memory, tail, tail_mod), base)
    moved = sym.clone()
    moved[0, 2] = 8  # a label position is scored
    assert not torch.allclose(reader_loss(reader, memory, moved, mod), base)
    # causal: changing a later position does not change the logits at earlier ones
    out_a = reader(memory, sym, mod)["sym"]
    changed = sym.clone()
    changed[1, 3] = 10
    out_b = reader(memory, changed, mod)["sym"]
    assert torch.allclose(out_a[1, :4], out_b[1, :4], atol=1e-6) and not torch.allclose(out_a[1, 4:], out_b[1, 4:])


def test_diffusion_grad_scale_changes_the_encoder_gradient_not_the_loss():
    torch.manual_seed(0)
    cfg = tiny_cfg(aux_reader_weight=0.0)
    model = build(cfg, RenderSpec((32, 64)), sat_labels())
    images = torch.rand(2, 1, 32, 64)
    sym = torch.randint(3, 20, (2, 12))
    batch = {"symbols": sym, "modifiers": torch.randint(3, 7, (2, 12))}
    grads, losses = [], []
    for scale in (1.0, 0.25, 0.0):
        model.cfg.diffusion_enc_grad = scale
        model.zero_grad()
        loss = model.loss(images, batch, torch.Generator().manual_seed(1))["loss"]
        loss.backward()
        losses.append(float(loss.detach()))
        grads.append(model.encoder.blocks[0].attn.q.weight.grad.clone())
    assert losses[0] == pytest.approx(losses[1]) == pytest.approx(losses[2])
    assert torch.allclose(grads[1], 0.25 * grads[0], atol=1e-6) and grads[2].abs().max() == 0


@pytest.mark.parametrize("opts", [{"dec_pos": "fixed"}, {"dec_shared_table": True}, {"dec_block": "official"},
                                  {"dec_pos": "fixed", "dec_shared_table": True, "dec_block": "official"}])
def test_official_decoder_options_train_and_reload(opts, tmp_path):
    """Each official-implementation switch builds, learns (the loss falls on one batch) and reloads exactly."""
    torch.manual_seed(0)
    cfg = tiny_cfg(**opts)
    labels = sat_labels()
    model = build(cfg, RenderSpec((32, 64)), labels)
    num_symbols, num_modifiers = labels.vocab.num_symbols, labels.vocab.num_modifiers
    if opts.get("dec_pos") == "fixed":
        assert not isinstance(model.decoder.pos_emb, torch.nn.Parameter)
        assert abs(float(model.decoder.pos_emb.abs().max()) - 1.0) < 1e-6  # unit amplitude, not learned
    if opts.get("dec_shared_table"):
        assert model.decoder.table.num_embeddings == num_symbols + num_modifiers
    batch = {"symbols": torch.randint(3, num_symbols, (4, cfg.max_len)),
             "modifiers": torch.randint(3, num_modifiers, (4, cfg.max_len))}
    images = torch.rand(4, 1, 32, 64)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for step in range(40):
        out = model.loss(images, batch, torch.Generator().manual_seed(step))
        opt.zero_grad()
        out["loss"].backward()
        opt.step()
        losses.append(float(out["ce"]))
    assert losses[-1] < 0.8 * losses[0]
    torch.save(model.state_dict(), tmp_path / "m.pt")
    again = build(cfg, RenderSpec((32, 64)), labels)
    again.load_state_dict(torch.load(tmp_path / "m.pt", weights_only=True))
    model.eval(), again.eval()
    mem = model.decoder.memory_kv(model.encoder(images))
    a = model.decoder(batch["symbols"], batch["modifiers"], mem)["sym"]
    b = again.decoder(batch["symbols"], batch["modifiers"], again.decoder.memory_kv(again.encoder(images)))["sym"]
    assert torch.equal(a, b)


def test_decoder_init_refuses_the_official_layout(tmp_path):
    from model.warm_start import decoder_from_ar

    model = tiny_model(dec_block="official")
    with pytest.raises(ValueError, match="dec_block=prenorm"):
        decoder_from_ar(model, tmp_path / "ar.pt")


def test_residual_stem_keeps_the_grid_and_adds_units_after_the_first_stage():
    plain = ViTEncoder((32, 64), 16, 32, 1, 2, conv_stem=True)
    deep = ViTEncoder((32, 64), 16, 32, 1, 2, conv_stem=True, stem_blocks=2)
    x = torch.rand(2, 1, 32, 64)
    assert deep(x).shape == plain(x).shape == (2, 2 * 4, 32)
    from model.encoder import ResidualConv
    units = [m for m in deep.patch_embed.net if isinstance(m, ResidualConv)]
    assert len(units) == 2 * 3  # patch 16: four stride-2 stages, units after the last three
    assert not any(isinstance(m, ResidualConv) for m in plain.patch_embed.net)
    # a unit is a residual: with its BN scale at zero it passes its input through unchanged
    unit = units[0]
    torch.nn.init.zeros_(unit.bn.weight)
    unit.eval()
    h = torch.rand(1, unit.conv.in_channels, 5, 7)
    assert torch.allclose(unit(h), torch.relu(h))


@pytest.mark.parametrize("conv_stem", [False, True])
def test_wide_patches_give_more_columns_than_rows(conv_stem):
    """patch 16, patch_w 8 on 32x64: a 2x8 grid; the conv stem's last stride halves the rows alone."""
    enc = ViTEncoder((32, 64), 16, 32, 1, 2, conv_stem=conv_stem, patch_w=8)
    assert enc.grid == (2, 8)
    assert enc(torch.rand(2, 1, 32, 64)).shape == (2, 16, 32)
    if conv_stem:
        strides = [m.stride for m in enc.patch_embed.net if isinstance(m, torch.nn.Conv2d) and m.kernel_size == (3, 3)]
        assert strides == [(2, 2), (2, 2), (2, 2), (2, 1)]
    from model.encoder import ViTConfig, vit_flops
    assert vit_flops(ViTConfig(patch=16, patch_w=8, enc_dim=32, enc_depth=1), (32, 64))[1] == 16


def test_square_patches_are_unchanged_by_patch_w_zero():
    """patch_w=0 and patch_w=patch build the same modules as before the option (old checkpoints load)."""
    torch.manual_seed(0)
    a = ViTEncoder((32, 64), 16, 32, 1, 2, conv_stem=True, stem_blocks=1)
    b = ViTEncoder((32, 64), 16, 32, 1, 2, conv_stem=True, stem_blocks=1, patch_w=16)
    assert {k: v.shape for k, v in a.state_dict().items()} == {k: v.shape for k, v in b.state_dict().items()}
    b.load_state_dict(a.state_dict())
    a.eval(), b.eval()
    x = torch.rand(1, 1, 32, 64)
    assert torch.equal(a(x), b(x))


def test_impossible_patch_shapes_are_refused():
    from model.errors import RecognizerConfigError
    from model.registry import validate_config
    with pytest.raises(ValueError, match="16x8"):
        ViTEncoder((32, 60), 16, 32, 1, 2, patch_w=8)           # 60 columns are not a multiple of 8
    with pytest.raises(ValueError, match="power-of-two"):
        ViTEncoder((32, 48), 16, 32, 1, 2, conv_stem=True, patch_w=12)
    with pytest.raises(RecognizerConfigError, match="patch_w"):
        validate_config(tiny_cfg(patch_w=-1))


def test_stem_blocks_without_a_conv_stem_or_negative_is_refused():
    with pytest.raises(ValueError, match="conv_stem"):
        ViTEncoder((32, 64), 16, 32, 1, 2, stem_blocks=1)
    with pytest.raises(ValueError, match=">= 0"):
        ViTEncoder((32, 64), 16, 32, 1, 2, conv_stem=True, stem_blocks=-1)
