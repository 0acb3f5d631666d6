"""model.search.greedy over each token recognizer's step function reads what a decoder that recomputes
the whole prefix at every step (no cache, no carried state: the teacher-forced pass) reads; the AR
baseline's fixed-shape step (preallocated cache) reads what its growing cache reads; the NumPy beam
of the exported folders reads what model.search.beam reads."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings, strategies as st

from builders import tiny_model, token_labels
from model import DecodeSpec
from model.ar.decoder import cached_step, static_step
from model.search import BOS, EOS, PAD, beam, best, greedy, with_reorder

B, MAX_LEN = 6, 12


def model_of(kind: str, **kw):
    torch.manual_seed(0)
    model = tiny_model(kind, canvas=(32, 64), labels=token_labels(15), max_len=MAX_LEN, **kw).eval()
    with torch.no_grad():  # a sharper random head (outputs vary) and a likelier EOS (some rows end early)
        model.decoder.head.weight.mul_(8)
        model.decoder.head.bias[EOS] += 1.5
    return model


def images() -> torch.Tensor:
    return torch.rand(B, 1, 32, 64, generator=torch.Generator().manual_seed(3))


def recompute_greedy(next_scores) -> torch.Tensor:
    """Greedy by rescoring the whole prefix each step: next_scores(prefix [B, p]) -> [B, V]."""
    out = torch.full((B, 1), BOS, dtype=torch.long)
    done = torch.zeros(B, dtype=torch.bool)
    for _ in range(MAX_LEN - 1):
        nxt = next_scores(out).argmax(-1).masked_fill(done, PAD)
        out = torch.cat([out, nxt[:, None]], 1)
        done |= nxt == EOS
        if done.all():
            break
    return out


def prefix_scorer(model):
    """The recognizer's teacher-forced pass over a prefix, last position's scores."""
    with torch.no_grad():
        if model.kind == "ar":
            kv = model.decoder.memory_kv(model.encoder(images()))
            return lambda prefix: model.decoder(prefix, kv)[:, -1]
        if model.kind == "posformer":
            kv = model.decoder.stack.memory_kv(model.encode(images()))

            def posformer(prefix):  # keep: whether each emitted token counts (the last one's is not read yet)
                keep = torch.cat([model.keep[prefix[:, 1:]], torch.ones(B, 1, dtype=torch.bool)], 1)
                return model.decoder(prefix, kv, keep)[:, -1]
            return posformer
        memory, state = model.start(images())
        dummy = torch.full((B, 1), PAD, dtype=torch.long)
        return lambda prefix: model.decoder.teacher_forced(torch.cat([prefix, dummy], 1), state, memory)[0][:, -1]


@pytest.mark.parametrize("kind,kw", [("ar", {}), ("posformer", {}), ("posformer", {"encoder": "vit"}),
                                     ("posformer", {"attn_correction": "none"}), ("hvt", {})])
def test_greedy_over_the_step_reads_what_recomputing_the_prefix_reads(kind, kw):
    model = model_of(kind, **kw)
    with torch.no_grad():
        fast = model.decode_ids(images(), DecodeSpec("greedy"))
        slow = recompute_greedy(prefix_scorer(model))
    assert torch.equal(fast, slow), (fast, slow)
    assert (fast[:, -1] == EOS).any() or fast.shape[1] == MAX_LEN
    for row in fast.tolist():  # PAD, and only PAD, after a row's EOS
        if EOS in row:
            assert set(row[row.index(EOS) + 1:]) <= {PAD}


def test_the_fixed_shape_ar_step_reads_what_the_growing_cache_reads():
    model = model_of("ar")
    with torch.no_grad():
        kv = model.decoder.memory_kv(model.encoder(images()))
        grown, fixed = cached_step(model.decoder, kv), static_step(model.decoder, kv)
        last = torch.full((B,), BOS, dtype=torch.long)
        for pos in range(MAX_LEN - 1):
            a, b = grown(last, pos), fixed(last, pos)
            assert torch.allclose(a, b, atol=1e-5), pos
            last = a.argmax(-1)
        assert torch.equal(greedy(cached_step(model.decoder, kv), B, MAX_LEN, "cpu"),
                           greedy(static_step(model.decoder, kv), B, MAX_LEN, "cpu"))
        eager = model.decode_ids(images(), DecodeSpec("greedy"))
        model.static_decoding = True  # what train.compiled.compile_for_decoding switches on
        assert torch.equal(model.decode_ids(images(), DecodeSpec("greedy")), eager)


def prefix_step(score_rows, width: int):
    """A beam step with no carried state: it keeps every row's whole prefix and rescores it each call,
    so its `reorder` only reorders prefixes (what a carried cache or coverage must reproduce)."""
    rows = [torch.full((width, 0), 0, dtype=torch.long)]

    def step(last, pos):
        rows[0] = torch.cat([rows[0], last[:, None]], 1)
        return score_rows(rows[0])

    def reorder(src):
        rows[0] = rows[0][src]
    return with_reorder(step, reorder)


def one_image_scorer(model, i: int, width: int):
    """The teacher-forced pass of image i over `width` prefixes: last position's log-probabilities."""
    img = images()[i: i + 1]
    if model.kind == "ar":
        kv = [(k.expand(width, -1, -1, -1), v.expand(width, -1, -1, -1))
              for k, v in model.decoder.memory_kv(model.encoder(img))]
        return lambda prefix: model.decoder(prefix, kv)[:, -1].float().log_softmax(-1)
    if model.kind == "posformer":
        kv = [(k.expand(width, -1, -1, -1), v.expand(width, -1, -1, -1))
              for k, v in model.decoder.stack.memory_kv(model.encode(img))]

        def posformer(prefix):
            keep = torch.cat([model.keep[prefix[:, 1:]], torch.ones(width, 1, dtype=torch.bool)], 1)
            return model.decoder(prefix, kv, keep)[:, -1].float().log_softmax(-1)
        return posformer
    memory, state = model.start(img)
    memory, state = memory.expand(width), state.select(torch.zeros(width, dtype=torch.long))
    dummy = torch.full((width, 1), PAD, dtype=torch.long)
    return lambda prefix: model.decoder.teacher_forced(torch.cat([prefix, dummy], 1), state, memory)[0][:, -1]


@pytest.mark.parametrize("kind,kw", [("ar", {}), ("posformer", {}), ("posformer", {"encoder": "vit"}),
                                     ("hvt", {})])
def test_beam_over_the_carried_state_reads_what_recomputing_the_prefix_reads(kind, kw):
    """One beam search for every token recognizer: its carried state (cache, coverage, LSTM), reordered
    with the survivors, gives the hypotheses that rescoring whole prefixes gives; width 1 is greedy."""
    model = model_of(kind, **kw)
    width = 3
    with torch.no_grad():
        fast = model.decode_ids(images(), DecodeSpec("beam", beam=width))
        for i in range(B):
            ref = best(beam(prefix_step(one_image_scorer(model, i, width), width), width, MAX_LEN, "cpu"))
            row = fast[i][: len(ref)]
            assert torch.equal(row, ref) and set(fast[i][len(ref):].tolist()) <= {PAD}, (i, fast[i], ref)
        greedy_rows = model.decode_ids(images(), DecodeSpec("greedy"))
        for i in range(B):  # the search itself at width 1 (decode_ids sends beam 1 to greedy)
            one = best(beam(prefix_step(one_image_scorer(model, i, 1), 1), 1, MAX_LEN, "cpu"))
            assert torch.equal(greedy_rows[i][: len(one)], one), (i, greedy_rows[i], one)


def _table_steps(table: torch.Tensor):
    """The same toy decoder twice: next-token logits read from table[last token, :, position], no state.
    The PyTorch step for model.search, the NumPy one for model.onnx_samplers."""
    def torch_step(last: torch.Tensor, pos: int) -> torch.Tensor:
        return table[last, :, pos]

    def numpy_step(token, position, state):
        return table.numpy()[token[:, 0], :, int(position[0])], state
    return with_reorder(torch_step, lambda src: None), numpy_step


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), width=st.integers(1, 6), eos_bias=st.floats(-1.0, 3.0),
       max_len=st.integers(2, 14))
def test_the_numpy_beam_reads_what_the_pytorch_beam_reads(seed, width, eos_bias, max_len):
    """onnx_samplers.beam (what an exported folder decodes with) against model.search.beam: the same
    best hypothesis, its score, and each token's probability, for hypotheses that stop early, late or
    never (max_len reached)."""
    from model.onnx_samplers import beam as numpy_beam

    g = torch.Generator().manual_seed(seed)
    table = 3 * torch.randn(15, 15, max_len, generator=g)
    table[:, EOS] += eos_bias
    table[:, BOS] = table[:, PAD] = -1e9  # never chosen, as a trained head's
    torch_step, numpy_step = _table_steps(table)
    hyps = beam(torch_step, width, max_len, "cpu")
    got = numpy_beam(numpy_step, width, max_len, (), lambda state, src: state)
    assert [ids for _, ids, _ in got] == [h[1].tolist() for h in hyps]  # every finished one, in order
    assert [s for s, _, _ in got] == pytest.approx([h[0] for h in hyps], rel=1e-5, abs=1e-5)
    for _, ids, probs in got:
        logp = torch.stack([table[a, :, p] for p, a in enumerate(ids[:-1])]).log_softmax(-1)
        assert probs == pytest.approx(logp.gather(1, torch.tensor(ids[1:])[:, None])[:, 0].exp().tolist(), abs=1e-5)
