"""Less work on short labels: `Recognizer.trim_padding` cuts a batch's label columns past its longest
label (token recognizers only; the loss is the same, tested for each), and `epoch_batches(lengths, pool)`
groups labels of like length (every sample once an epoch, deterministic, the order of lengths random)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from builders import tiny_model
from test_train import micro_cfg, micro_data  # noqa: F401  (the fixture)
from train.data import epoch_batches


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


LABELS = ["x ^ { 2 }", "a", "\\frac { a } { b } + c", "y _ { i }"]


def batch_for(model, labels):
    rows = [model.targets(s) for s in labels]
    return {k: torch.from_numpy(np.stack([r[k] for r in rows])) for k in rows[0]}


KINDS = {
    "ar": {},
    "hvt": dict(res_channels=(8, 8, 8, 8), enc_dim=32, dec_dim=32, emb_dim=16, attn_dim=16, cov_kernel=3,
                cov_channels=4),
    "posformer-no-arm": dict(growth_rate=4, dense_layers=2, dense_dropout=0.0, dec_ff=64, bidirectional=True,
                             attn_correction="none"),
}
POSFORMER = dict(growth_rate=4, dense_layers=2, dense_dropout=0.0, dec_ff=64, arm_channels=8, bidirectional=True)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_loss_is_the_same_on_the_trimmed_batch(kind):
    from tokenizer.label_spec import LabelSpec
    torch.manual_seed(0)
    labels = LabelSpec.build("token", LABELS)
    model = tiny_model(kind.split("-")[0], canvas=(32, 64), labels=labels, max_len=24, dropout=0.0,
                       **KINDS[kind]).train()
    batch = batch_for(model, LABELS)
    trimmed = model.trim_padding(batch)
    longest = max(len(s.split()) for s in LABELS) + 2      # BOS ... EOS
    assert trimmed["tokens"].shape[1] == longest < batch["tokens"].shape[1]
    assert all(v.shape[1] == longest for k, v in trimmed.items() if v.dim() == 2)
    images = torch.rand(len(LABELS), 1, 32, 64)
    full = model.loss(images, batch, torch.Generator().manual_seed(0))
    cut = model.loss(images, trimmed, torch.Generator().manual_seed(0))
    assert set(full) == set(cut)
    for name in full:
        torch.testing.assert_close(cut[name], full[name], rtol=1e-5, atol=1e-6)


def test_gryphone_keeps_its_whole_window():
    model = tiny_model("diffusion")
    batch = batch_for(model, ["x^{2}", "a"])
    assert model.trim_padding(batch) is batch


def test_posformer_trims_like_its_reference():
    """PosFormer's batches are padded to their longest label in its reference code, and its attention
    refinement's BatchNorm takes training statistics over those positions: in eval mode the trimmed
    loss is the whole window's; in training mode the statistics differ (they no longer count the PAD
    positions up to 160)."""
    from tokenizer.label_spec import LabelSpec
    torch.manual_seed(0)
    model = tiny_model("posformer", labels=LabelSpec.build("token", LABELS), max_len=24, **POSFORMER).eval()
    batch = batch_for(model, LABELS)
    trimmed = model.trim_padding(batch)
    assert trimmed["tokens"].shape[1] < batch["tokens"].shape[1]
    assert all(v.shape[1] == trimmed["tokens"].shape[1] for v in trimmed.values() if v.dim() == 2)
    images = torch.rand(len(LABELS), 1, 32, 64)
    full, cut = model.loss(images, batch, None), model.loss(images, trimmed, None)
    for name in full:
        torch.testing.assert_close(cut[name], full[name], rtol=1e-5, atol=1e-6)


def test_a_full_batch_is_returned_as_it_is():
    model = tiny_model("ar", max_len=6)
    batch = {"tokens": torch.ones(2, 6, dtype=torch.long)}
    assert model.trim_padding(batch) is batch


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 200), batch=st.integers(1, 9), pool=st.integers(0, 6), seed=st.integers(0, 3),
       epoch=st.integers(0, 2))
def test_bucketed_batches_see_every_sample_once(n, batch, pool, seed, epoch):
    lengths = np.random.default_rng(seed).integers(1, 50, n)
    plain = epoch_batches(n, batch, seed, epoch)
    bucketed = epoch_batches(n, batch, seed, epoch, lengths=lengths, pool=pool)
    assert bucketed == epoch_batches(n, batch, seed, epoch, lengths=lengths, pool=pool)   # deterministic
    assert len(bucketed) == len(plain) and all(len(b) == len(p) for b, p in zip(bucketed, plain))
    flat = [i for b in bucketed for i in b]
    assert len(set(flat)) == len(flat) or n < batch      # a set smaller than a batch repeats samples
    if n >= batch and n % (batch * max(pool, 1)) == 0:
        assert sorted(flat) == sorted(i for b in plain for i in b) == list(range(n))


def test_buckets_hold_labels_of_like_length():
    n, batch = 4000, 16
    lengths = np.random.default_rng(0).integers(5, 160, n)
    spread = lambda batches: np.mean([np.ptp(lengths[b]) for b in batches])
    plain, bucketed = epoch_batches(n, batch, 0, 0), epoch_batches(n, batch, 0, 0, lengths=lengths, pool=50)
    assert spread(bucketed) < spread(plain) / 10
    firsts = [lengths[b].max() for b in bucketed[:50]]
    assert firsts != sorted(firsts)          # the batches themselves come in random order



def test_the_trainer_buckets_and_trims_an_eager_step(micro_data, tmp_path):  # noqa: F811
    """A micro AR run with data.length_buckets: its loader's batches are the bucketed ones and a step
    feeds the model a window cut at the batch's longest label."""
    from train.data import label_lengths
    from train.trainer import Env, Trainer

    cfg = micro_cfg(micro_data, tmp_path / "run", "model.kind=ar", "data.length_buckets=2", "batch_size=2",
                    "ckpt_every=0", "eval.every=0")
    trainer = Trainer(cfg, Env(torch.device("cpu")), None, None)
    lengths = label_lengths(trainer.dataset)
    assert len(lengths) == len(trainer.dataset) and lengths.min() > 2
    expected = epoch_batches(len(trainer.dataset), cfg.batch_size, cfg.seed, 0, lengths=lengths, pool=2)
    assert list(trainer._loader(torch.Generator()).batch_sampler) == expected
    seen = []
    original = trainer.model.loss
    trainer.model.loss = lambda images, batch, gen=None: seen.append(batch["tokens"].shape[1]) or original(images, batch, gen)
    batch = next(iter(trainer._loader(torch.Generator().manual_seed(0))))
    trainer.train_step(batch)
    assert seen == [int((batch["tokens"] != 0).sum(1).max())] and seen[0] < batch["tokens"].shape[1]


@settings(max_examples=200, deadline=None)
@given(full=st.integers(2, 300), buckets=st.integers(1, 12), data=st.data())
def test_a_bucketed_width_is_the_smallest_allowed_width_that_holds_the_labels(full, buckets, data):
    from model.recognizer import bucket_width

    width = data.draw(st.integers(1, full))
    allowed = sorted({-(-full * k // buckets) for k in range(1, buckets + 1)})
    got = bucket_width(width, full, buckets)
    assert got in allowed and got >= width and allowed[-1] == full
    assert all(w < width for w in allowed if w < got)


def test_a_compiled_loss_cuts_to_one_of_its_windows():
    """trim_padding(buckets=4) on a 24-token window: the longest label (11 columns with BOS and EOS)
    rounds up to 12, half the window; the loss is the same as on the exact cut."""
    from tokenizer.label_spec import LabelSpec
    torch.manual_seed(0)
    model = tiny_model("ar", labels=LabelSpec.build("token", LABELS), max_len=24, dropout=0.0).train()
    batch = batch_for(model, LABELS)
    exact, windowed = model.trim_padding(batch), model.trim_padding(batch, buckets=4)
    assert exact["tokens"].shape[1] == 11 and windowed["tokens"].shape[1] == 12
    assert model.trim_padding(batch, buckets=1) is batch
    images = torch.rand(len(LABELS), 1, 32, 64)
    a = model.loss(images, exact, torch.Generator().manual_seed(0))
    b = model.loss(images, windowed, torch.Generator().manual_seed(0))
    for name in a:
        torch.testing.assert_close(b[name], a[name], rtol=1e-5, atol=1e-6)
