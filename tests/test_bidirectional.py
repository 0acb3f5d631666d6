"""Bidirectional readers (CoMER's L2R + R2L training in one decoder) and the reranked beam search of
model.search.bidirectional_best: the reversal helpers round-trip, teacher forcing through a step equals
the decoder's own pass, the pick is the best candidate by the documented score, an ensemble reads
backwards with its bidirectional members only, and the exported (NumPy) search picks what PyTorch picks."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from hypothesis import given, settings, strategies as st

from builders import tiny_model
from model import DecodeSpec
from model.ar.decoder import ar_loss
from model.ensemble import EnsembleRecognizer
from model.search import (BOS, EOS, PAD, beam, bidirectional_best, both_ways, end_with_eos, flip_r2l, pad_rows,
                          reverse_ids, reverse_like, search_ids, sequence_logp, token_logp, unique_rows)

CANVAS = (32, 128)


def _model(seed: int, bidirectional: bool = True, sharpen: bool = True):
    torch.manual_seed(seed)
    rec = tiny_model("ar", canvas=CANVAS, bidirectional=bidirectional).eval()
    if sharpen:
        with torch.no_grad():  # a sharper random head: beams disagree, candidates differ
            rec.decoder.head.weight.mul_(6)
            rec.decoder.head.bias[EOS] -= 1.0
    return rec


def _images(n: int = 3, seed: int = 5) -> torch.Tensor:
    return torch.rand(n, 1, *CANVAS, generator=torch.Generator().manual_seed(seed))


label_rows = st.lists(st.lists(st.integers(3, 20), min_size=0, max_size=9), min_size=1, max_size=5)


@settings(max_examples=60, deadline=None)
@given(label_rows)
def test_reversing_back_is_the_identity_and_flip_undoes_a_reversal(rows):
    ids = pad_rows([torch.tensor([BOS, *r, EOS]) for r in rows], "cpu")
    back = reverse_ids(ids)
    assert torch.equal(reverse_like(back, back, BOS, EOS), ids)
    for j, r in enumerate(rows):
        n = len(r) + 2
        assert back[j, :n].tolist() == [EOS, *r[::-1], BOS] and (back[j, n:] == PAD).all()
        assert flip_r2l(back[j, :n]).tolist() == [BOS, *r, EOS]
    assert unique_rows(torch.cat([ids, ids])) == unique_rows(ids)


def test_a_cut_off_hypothesis_ends_with_eos_and_flips_without_bos():
    cands = pad_rows([torch.tensor([BOS, 5, 6, 7]), torch.tensor([BOS, 5, EOS])], "cpu")
    assert end_with_eos(cands).tolist() == [[BOS, 5, 6, EOS], [BOS, 5, EOS, PAD]]
    assert flip_r2l(torch.tensor([EOS, 7, 6])).tolist() == [BOS, 6, 7, EOS]


@pytest.mark.parametrize("kind", ["ar", "posformer"])
def test_teacher_forcing_through_the_step_is_the_decoders_pass(kind):
    """`forced` (one pass) and the step fed one position at a time read the same log p, both directions."""
    torch.manual_seed(0)
    rec = tiny_model(kind, canvas=CANVAS, bidirectional=True, **({"encoder": "vit"} if kind == "posformer" else {}))
    images = _images()
    ids = pad_rows([torch.tensor([BOS, 4, 5, EOS]), torch.tensor([BOS, 6, EOS]), torch.tensor([BOS, 7, 8, 9, EOS])],
                   "cpu")
    steps = rec.eval().token_steps(images)
    for direction, rows in ((steps, ids), (steps.r2l, reverse_ids(ids))):
        for i in range(3):
            one = direction.forced(i, rows)
            by_step = token_logp(replace(direction, forced=None), i, rows)
            assert one.shape == by_step.shape == (3, rows.shape[1] - 1)
            assert torch.allclose(one.masked_fill(rows[:, 1:] == PAD, 0), by_step.masked_fill(rows[:, 1:] == PAD, 0),
                                  atol=1e-4)
            assert torch.allclose(sequence_logp(direction, i, rows), by_step.masked_fill(rows[:, 1:] == PAD, 0).sum(1),
                                  atol=1e-4)


def test_the_bidirectional_loss_is_both_readings_in_one_batch():
    """model.bidirectional: the loss is next-token CE over the labels and their reversals together."""
    rec = _model(1, sharpen=False).train()
    rec.decoder.drop.p = 0.0
    ids = pad_rows([torch.tensor([BOS, *r, EOS]) for r in ([4, 5], [6], [7, 8, 9, 10], [11, 12, 13])], "cpu")
    ids = torch.cat([ids, ids.new_full((4, rec.cfg.max_len - ids.shape[1]), PAD)], 1)
    images = _images(4)
    torch.manual_seed(0)
    got = rec.loss(images, {"tokens": ids})["loss"]
    memory = rec.encoder(images)
    want = ar_loss(rec.decoder, rec.decoder.memory_kv(torch.cat([memory, memory])),
                   torch.cat([ids, reverse_ids(ids)]))["loss"]
    assert got.item() == pytest.approx(want.item(), rel=1e-5)
    assert rec.flops_per_image() > _model(1, bidirectional=False).flops_per_image()


@pytest.mark.parametrize("width", [2, 3])
def test_the_pick_is_the_best_candidate_of_both_beams(width):
    rec = _model(2)
    steps = rec.token_steps(_images())
    for i in range(steps.images):
        got = bidirectional_best(steps, i, width)
        l2r = [h[1] for h in beam(steps.image(i, width), width, steps.max_len, "cpu")]
        r2l = [flip_r2l(h[1]) for h in beam(steps.r2l.image(i, width), width, steps.max_len, "cpu", start=EOS, stop=BOS)]
        rows = end_with_eos(pad_rows(l2r + r2l, "cpu"))
        cands = rows[unique_rows(rows)]
        assert any(torch.equal(got, c) for c in cands)
        same, found_l2r, _, _ = both_ways(steps, i, width)
        assert torch.equal(same, cands)
        assert found_l2r.tolist() == [any(torch.equal(c, r) for r in rows[: len(l2r)]) for c in cands]
        score = (sequence_logp(steps, i, cands)
                 + sequence_logp(steps.r2l, i, reverse_ids(cands))) / (2 * ((cands != PAD).sum(1) - 1))
        j = next(j for j, c in enumerate(cands) if torch.equal(got, c))
        assert score[j] == score.max()


def test_the_spec_turns_the_reranking_off():
    rec = _model(3)
    images = _images()
    plain = rec.decode_ids(images, DecodeSpec("beam", beam=3, bidirectional=False))
    assert torch.equal(plain, search_ids(replace(rec.token_steps(images), r2l=None), 3))
    both = rec.decode_ids(images, DecodeSpec("beam", beam=3))
    assert torch.equal(both, search_ids(rec.token_steps(images), 3)) and not torch.equal(both, plain)
    assert DecodeSpec("beam", beam=3, bidirectional=False).name == "beam3-l2r"
    assert DecodeSpec("beam", beam=3).name == "beam3"
    one_way = _model(3, bidirectional=False)
    assert one_way.token_steps(images).r2l is None          # a one-direction reader keeps the plain beam
    assert torch.equal(one_way.decode_ids(images, DecodeSpec("beam", beam=3)), plain)


def test_an_ensemble_reads_backwards_with_its_bidirectional_members_only():
    both, one_way = _model(4), _model(5, bidirectional=False)
    images = _images()
    spec = DecodeSpec("beam", beam=3, valid=False)
    assert EnsembleRecognizer([one_way]).token_steps(images).r2l is None
    assert EnsembleRecognizer([both]).recognize(images, spec) == both.recognize(images, spec)
    ens = EnsembleRecognizer([both, one_way])
    steps, alone = ens.token_steps(images), both.token_steps(images)
    last = torch.full((3,), EOS, dtype=torch.long)
    mixed = steps.r2l.image(0, 3)(last, 0)
    own = alone.r2l.image(0, 3)(last, 0).float().log_softmax(-1)
    assert torch.allclose(mixed, own, atol=1e-6)   # the one-way member has no say right to left
    conf = []
    out = ens.recognize(images, spec, confidences=conf)
    assert len(out) == 3 and all(0.0 <= c <= 1.0 for c in conf)


def test_an_exported_bidirectional_ensemble_picks_what_the_checkpoints_pick(tmp_path):
    pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
    from test_ensemble import _save

    from model import load
    from model.ensemble_spec import write_ensemble
    from model.onnx_export import export_onnx

    _save(_model(6), tmp_path / "a.pt"), _save(_model(7, bidirectional=False), tmp_path / "b.pt")
    _save(_model(8), tmp_path / "c.pt")
    images = _images(4, seed=9)
    for files in (["a.pt"], ["a.pt", "b.pt", "c.pt"]):
        ens = load(write_ensemble(tmp_path / "ens.json", files, "beam", 3))
        export_onnx(ens, tmp_path / f"onnx{len(files)}")
        exported = load(tmp_path / f"onnx{len(files)}").recognizer
        for spec in (DecodeSpec("beam", beam=3, valid=False), DecodeSpec("beam", beam=2, valid=False, bidirectional=False)):
            conf_t, conf_o = [], []
            assert exported.recognize(images, spec, confidences=conf_o) == ens.recognizer.recognize(
                images, spec, confidences=conf_t), (files, spec)
            assert conf_o == pytest.approx(conf_t, abs=1e-4)
    single = load(tmp_path / "a.pt").recognizer
    export_onnx(load(tmp_path / "a.pt"), tmp_path / "one")
    spec = DecodeSpec("beam", beam=3, valid=False)
    assert load(tmp_path / "one").recognizer.recognize(images, spec) == single.recognize(images, spec)
    assert load(tmp_path / "one").recognizer.cfg.bidirectional   # the export keeps what the search needs
