"""PosFormer on the recognizer seam: token-level position forest, IAC's coverage mask, decoding that
never touches the training-only forest branch, an overfit check, and the checkpoint round trip."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import model
from datasets_prep.render_spec import RenderSpec
from model.posformer.arm import exclusive_coverage
from model.checkpoint import save_checkpoint
from model.posformer.densenet import DenseNetEncoder
from model.posformer.recognizer import PosFormer, PosFormerConfig, structure_ids
from model.posformer.decoder import StepState
from model.posformer.search import BOS, EOS, PAD, coverage_step
from model.search import beam, greedy, reverse_ids, reverse_like
from model.recognizer import DecodeSpec
from model.posformer.token_forest import IGNORE, is_structure_token, token_forest, token_paths
from tokenizer import tokenize
from tokenizer.label_spec import LabelSpec

LABELS = ["x^{2}", r"\frac{a}{b}", "x_{i}^{2}", r"\sqrt[3]{x}"]
CANVAS = (32, 64)        # small enough for CPU; the published canvas is checked where only shapes matter


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


def tiny(**kw) -> PosFormerConfig:
    base = dict(growth_rate=4, dense_layers=2, dense_dropout=0.0, dec_dim=32, dec_depth=2, dec_heads=2, dec_ff=64,
                arm_channels=8, max_len=16, dropout=0.0)
    return PosFormerConfig(**{**base, **kw})


def build(cfg: PosFormerConfig, labels=LABELS, canvas=CANVAS) -> PosFormer:
    return model.build(cfg, RenderSpec(canvas), LabelSpec.build("token", labels))


def batch_of(m: PosFormer, labels) -> dict[str, torch.Tensor]:
    rows = [m.targets(s) for s in labels]
    return {k: torch.from_numpy(np.stack([r[k] for r in rows])) for k in rows[0]}


# --- labels --------------------------------------------------------------------------------------
FOREST = {
    "x^{2}": (["M", "M", "M", "ML", "M"], [0, 0, 0, 1, 0], [0, 0, 0, 1, 0]),
    r"\frac{a}{b}": (["M", "M", "ML", "M", "M", "MR", "M"], [0, 0, 1, 0, 0, 1, 0], [0, 0, 1, 0, 0, 2, 0]),
    "x_{i}^{2}": (["M", "M", "M", "MR", "M", "M", "M", "ML", "M"], [0, 0, 0, 1, 0, 0, 0, 1, 0],
                  [0, 0, 0, 2, 0, 0, 0, 1, 0]),
    r"\sqrt[3]{x}": (["M", "ML", "ML", "ML", "M", "MR", "M"], [0, 1, 1, 1, 0, 1, 0], [0, 1, 1, 1, 0, 2, 0]),
    r"\sum_{i=1}^{n}": (["M", "M", "M", "MR", "MR", "MR", "M", "M", "M", "ML", "M"],
                        [0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0], [0, 0, 0, 2, 2, 2, 0, 0, 0, 1, 0]),
    r"\frac{\frac{a}{b}}{c}": (["M", "M", "ML", "ML", "MLL", "ML", "ML", "MLR", "ML", "M", "M", "MR", "M"],
                               [0, 0, 1, 1, 2, 1, 1, 2, 1, 0, 0, 1, 0], [0, 0, 1, 1, 1, 1, 1, 2, 1, 0, 0, 2, 0]),
    "a+b=c": (["M"] * 5, [0] * 5, [0] * 5),
}


@pytest.mark.parametrize("latex", FOREST, ids=list(FOREST))
def test_token_forest_edge_cases(latex):
    paths, levels, relations = FOREST[latex]
    toks = tokenize(latex)
    assert token_paths(toks) == paths
    lv, rel = token_forest(toks)
    # aligned with TokenVocab.encode: BOS tokens EOS, the specials ignored
    assert lv == [IGNORE] + levels + [IGNORE] and rel == [IGNORE] + relations + [IGNORE]


def test_forest_level_is_capped():
    deep = "a^{b^{c^{d^{e^{f^{g}}}}}}"
    levels, _ = token_forest(tokenize(deep), levels=3)
    assert max(levels) == 2 and token_paths(tokenize(deep))[-7] == "MLLLLLL"


def test_targets_are_aligned_and_padded():
    m = build(tiny())
    t = m.targets(r"\frac{a}{b}")
    n = len(tokenize(r"\frac{a}{b}"))
    assert set(t) == {"tokens", "level", "relation", "path"} and all(len(v) == 16 for v in t.values())
    assert t["tokens"][0] == BOS and t["tokens"][n + 1] == EOS
    assert (t["level"][n + 1:] == IGNORE).all() and t["level"][3] == 1 and t["relation"][6] == 2
    assert t["path"][0] == 0 and (t["path"][1: n + 1] > 0).all() and (t["path"][n + 1:] == 0).all()


def test_label_the_grammar_rejects_keeps_its_token_target():
    m = build(tiny())
    t = m.targets("x^{2}^{3}")                                  # double superscript: tokens yes, forest no
    assert t["tokens"][0] == BOS and (t["level"] == IGNORE).all() and (t["path"] == 0).all()


def test_structure_rule():
    for tok in ("^", "_", "{", "}", "<bos>", "<eos>", "\\left", "\\right", "&", "\\\\", "\\limits", "\\,", "\\mathrm",
                "\\begin{matrix}", "\\end{aligned}"):
        assert is_structure_token(tok), tok
    for tok in ("x", "2", "\\frac", "\\sqrt", "[", "(", "\\{", "\\alpha", "<unk>", "\\begin{pmatrix}", "\\sum"):
        assert not is_structure_token(tok), tok
    vocab = LabelSpec.build("token", LABELS).vocab
    mask = structure_ids(vocab)
    assert {t for t, s in zip(vocab.tokens, mask.tolist()) if s and t not in vocab.SPECIALS} == {"^", "_", "{", "}"}


def test_reverse_keeps_columns_aligned():
    m = build(tiny())
    b = batch_of(m, ["x^{2}", "a"])
    r = reverse_ids(b["tokens"])
    assert r[1, :4].tolist() == [EOS, b["tokens"][1, 1].item(), BOS, PAD]
    lv = reverse_like(b["level"], b["tokens"])
    assert lv[0, 1:6].tolist() == b["level"][0, 1:6].flip(0).tolist() and lv[0, 0] == IGNORE


# --- coverage ------------------------------------------------------------------------------------
def test_exclusive_coverage_skips_masked_steps():
    attn = torch.rand(1, 2, 5, 3)
    keep = torch.tensor([[True, False, True, True, False]])
    cov = exclusive_coverage(attn, keep)
    assert torch.equal(cov[:, :, 0], torch.zeros(1, 2, 3))
    assert torch.allclose(cov[:, :, 2], cov[:, :, 1])          # step 1 was masked: nothing added
    assert torch.allclose(cov[:, :, 4], attn[:, :, 0] + attn[:, :, 2] + attn[:, :, 3])


def _steps(m: PosFormer, ids: torch.Tensor, images: torch.Tensor):
    """Feed ids one step at a time; returns per-step log-probs and the coverage after each commit."""
    kv = m.decoder.stack.memory_kv(m.encode(images))
    state = StepState.empty(len(m.decoder.stack.layers))
    logps, covs = [], []
    for pos in range(ids.shape[1] - 1):
        logps.append(m.decoder.step(ids[:, pos], pos, kv, state))
        state.commit(m.keep[ids[:, pos + 1]])
        cov = state.coverage[1]
        covs.append(None if cov is None else cov.clone())
    return torch.stack(logps, 1), covs


@pytest.mark.parametrize("correction", ["iac", "arm", "none"])
def test_incremental_decoding_matches_teacher_forcing(correction):
    torch.manual_seed(0)
    m = build(tiny(attn_correction=correction)).eval()
    b = batch_of(m, LABELS[:2])
    images = torch.rand(2, 1, *CANVAS)
    with torch.no_grad():
        kv = m.decoder.stack.memory_kv(m.encode(images))
        ids = b["tokens"][:, :10]
        full = torch.log_softmax(m.decoder(ids[:, :-1], kv, m.keep[ids[:, 1:]]), -1)
        step, _ = _steps(m, ids, images)
    assert torch.allclose(full, step, atol=1e-4)


def test_iac_coverage_unchanged_after_structure_tokens():
    torch.manual_seed(0)
    m = build(tiny()).eval()
    ids = batch_of(m, ["x_{i}^{2}"])["tokens"][:, :11]        # BOS x _ { i } ^ { 2 } EOS
    with torch.no_grad():
        _, covs = _steps(m, ids, torch.rand(1, 1, *CANVAS))
    emitted = [m.labels.vocab.tokens[i] for i in ids[0, 1:].tolist()]
    for t in range(1, len(covs)):
        same = torch.equal(covs[t], covs[t - 1])
        assert same == is_structure_token(emitted[t]), (t, emitted[t])
    arm = build(tiny(attn_correction="arm")).eval()           # CoMER's ARM: every step counts
    with torch.no_grad():
        _, covs = _steps(arm, ids, torch.rand(1, 1, *CANVAS))
    assert not any(torch.equal(covs[t], covs[t - 1]) for t in range(1, len(covs)))


# --- encoder -------------------------------------------------------------------------------------
def test_densenet_output_shape():
    with torch.device("meta"):  # the published DenseNet-B, shapes only
        enc = DenseNetEncoder((64, 256), 256)
        out = enc(torch.empty(2, 1, 64, 256))
    assert enc.cnn.out_channels == 684 and enc.grid == (4, 16) and out.shape == (2, 64, 256)


def test_config_errors_are_clear():
    with pytest.raises(model.RecognizerConfigError, match="attn_correction"):
        build(tiny(attn_correction="coverage"))
    with pytest.raises(model.RecognizerConfigError, match="encoder"):
        build(tiny(encoder="resnet"))


# --- training and decoding -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def trained():
    """A tiny bidirectional IAC model with the forest branch, overfit on 4 images."""
    torch.manual_seed(0)
    m = build(tiny(bidirectional=True))
    b = batch_of(m, LABELS)
    images = (torch.rand(4, 1, *CANVAS, generator=torch.Generator().manual_seed(1)) > 0.7).float()
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    losses = []
    for _ in range(60):
        parts = m.loss(images, b, torch.Generator())
        opt.zero_grad()
        parts["loss"].backward()
        opt.step()
        losses.append({k: v.item() for k, v in parts.items()})
    return m.eval(), images, losses


def test_loss_decreases_and_greedy_reads_the_labels(trained):
    m, images, losses = trained
    assert set(losses[0]) == {"loss", "ce", "pos_ce"}
    assert losses[-1]["ce"] < 0.3 * losses[0]["ce"] and losses[-1]["pos_ce"] < 0.5 * losses[0]["pos_ce"]
    out = m.recognize(images, DecodeSpec("greedy"), stats=None)
    assert out == [m.labels.vocab.decode(m.labels.vocab.encode(s, 16)) for s in LABELS]
    shuffled = m.recognize(images[[1, 2, 3, 0]], DecodeSpec("greedy"))
    assert shuffled != out                                     # the output depends on the image
    assert m.recognize(images, DecodeSpec("beam", beam=3)) == out   # bidirectional reranking agrees


def test_forest_branch_is_not_used_at_inference(trained):
    m, images, _ = trained
    spec = DecodeSpec("beam", beam=2)
    ids = m.decode_ids(images, DecodeSpec("greedy")), m.decode_ids(images, spec)
    saved = {k: v.clone() for k, v in m.forest.state_dict().items()}
    with torch.no_grad():
        for p in m.forest.parameters():
            p.zero_()
    assert torch.equal(m.decode_ids(images, DecodeSpec("greedy")), ids[0])
    assert torch.equal(m.decode_ids(images, spec), ids[1])
    forest, m.forest = m.forest, None
    try:
        assert torch.equal(m.decode_ids(images, DecodeSpec("greedy")), ids[0])
    finally:
        m.forest = forest
        m.forest.load_state_dict(saved)


def test_beam_width_one_is_greedy(trained):
    m, images, _ = trained
    with torch.no_grad():
        kv = m.decoder.stack.memory_kv(m.encode(images))
        g = greedy(coverage_step(m.decoder, kv, m.keep), images.shape[0], 16, "cpu")
        for i in range(images.shape[0]):
            one = [(k[i: i + 1], v[i: i + 1]) for k, v in kv]
            (_, seq), = beam(coverage_step(m.decoder, one, m.keep), 1, 16, "cpu")
            assert seq.tolist() == [t for t in g[i].tolist() if t != PAD]


def test_state_dict_round_trip_through_the_seam(tmp_path):
    torch.manual_seed(0)
    m = build(tiny(), canvas=(64, 256)).eval()
    images = torch.rand(2, 1, 64, 256)
    path = tmp_path / "posformer.pt"
    save_checkpoint(path, {"train_config": {}, "model_config": dataclasses.asdict(m.cfg), "render": m.render.to_dict(),
                           "labels": m.labels.to_dict(), "model": m.state_dict(), "step": 0})
    loaded = model.load(path).recognizer
    assert isinstance(loaded, PosFormer) and loaded.cfg == m.cfg
    assert torch.equal(loaded.decode_ids(images, DecodeSpec("greedy")), m.decode_ids(images, DecodeSpec("greedy")))


def test_flops_and_vit_encoder():
    m = build(tiny(encoder="vit", patch=16, enc_dim=32, enc_depth=1, enc_heads=2, forest_weight=0))
    assert m.forest is None and m.encoder.grid == (2, 4)
    parts = m.loss(torch.rand(2, 1, *CANVAS), batch_of(m, LABELS[:2]), torch.Generator())
    assert set(parts) == {"loss", "ce"} and torch.isfinite(parts["loss"])
    full = build(tiny(bidirectional=True))
    assert full.flops_per_image(True) > 3 * full.flops_per_image(False) > 0


def test_a_vit_preset_switched_to_posformer_keeps_its_vit_and_a_key_that_does_nothing_is_refused():
    from train.config import apply_overrides, preset

    demo = preset("demo")
    cfg = apply_overrides(demo, ["model.kind=posformer"])
    assert cfg.model.encoder == "vit" and cfg.model.enc_dim == demo.model.enc_dim  # the measured demo PosFormer
    with pytest.raises(ValueError, match="model.enc_dim does nothing for model.kind=posformer with "
                                         "model.encoder=densenet"):
        apply_overrides(preset("posformer-paper"), ["model.enc_dim=64"])
    with pytest.raises(ValueError, match="model.growth_rate does nothing .*its keys: patch"):
        apply_overrides(demo, ["model.kind=posformer", "model.growth_rate=8"])
    cfg = apply_overrides(demo, ["model.kind=posformer", "model.encoder=densenet", "model.growth_rate=8"])
    assert cfg.model.growth_rate == 8
