"""Compiled training and decoding agree with the eager paths (train/compiled.py), and the step's random
numbers drawn before the step give the very masks the loss once drew itself (model.gryphone.diffusion.mask_draws)."""
from __future__ import annotations

import pytest
import torch

from builders import tiny_model
from model import DecodeSpec
from model.gryphone.diffusion import apply_mask, mask_draws, mask_view
from test_train import _losses, micro_cfg, micro_data  # noqa: F401  (the fixture)


@pytest.mark.parametrize("mode", ["joint", "independent"])
def test_drawn_masks_equal_the_masks_drawn_inside(mode):
    sym = torch.randint(3, 20, (6, 12))
    mod = torch.randint(3, 9, (6, 12))
    inside = mask_view(sym, mod, 10, torch.Generator().manual_seed(5), mode)
    draws = mask_draws((6, 12), 1, 10, torch.Generator().manual_seed(5), mode)
    assert set(draws) == ({"mask_t", "mask_u", "mask_u_mod"} if mode == "independent" else {"mask_t", "mask_u"})
    for a, b in zip(inside, apply_mask(sym, mod, draws)):
        assert torch.equal(a, b)


def test_the_loss_from_drawn_tensors_equals_the_loss_that_draws_itself():
    from model import LossConfig

    torch.manual_seed(0)
    model = tiny_model(aux_reader_weight=1.0, loss=LossConfig(T=10, kl_warmup_steps=10))
    images = torch.rand(2, 1, 32, 64)
    batch = {"symbols": torch.randint(3, 20, (2, 12)), "modifiers": torch.randint(3, 7, (2, 12)),
             **model.step_inputs(3)}
    itself = model(images, batch, torch.Generator().manual_seed(9))
    drawn = model(images, {**batch, **model.draws(batch, torch.Generator().manual_seed(9))})
    assert {k: float(v.detach()) for k, v in itself.items()} == {k: float(v.detach()) for k, v in drawn.items()}


@pytest.mark.parametrize("kind", ["diffusion", "ar"])
def test_compiled_training_follows_the_eager_losses(micro_data, tmp_path, kind):  # noqa: F811
    from train.trainer import train

    torch.set_num_threads(1)
    common = ("max_steps=4", "log_every=1", "ckpt_every=0", f"model.kind={kind}")
    train(micro_cfg(micro_data, tmp_path / "eager", *common, "compile=false"))
    train(micro_cfg(micro_data, tmp_path / "compiled", *common, "compile=true"))
    eager, compiled = _losses(tmp_path / "eager"), _losses(tmp_path / "compiled")
    assert sorted(compiled) == [1, 2, 3, 4]
    for step in eager:  # micro trains without dropout: the graphs differ only in float rounding
        assert compiled[step] == pytest.approx(eager[step], rel=1e-4), step


@pytest.mark.parametrize("kind", ["diffusion", "ar"])
def test_compiled_cpu_training_draws_the_eager_dropout(kind):
    """With dropout on, a CPU-compiled loss draws from the eager generator (fallback_random): on the
    same window, the same masks, so the same losses and gradients as eager to float rounding. (The
    trainer's eager step trims the window to the batch's longest label, so there the masks differ.)"""
    from tokenizer.vocab import TokenVocab
    from train.compiled import compile_for_training

    torch.manual_seed(0)
    eager = tiny_model(kind, dropout=0.3).train()
    compiled_model = tiny_model(kind, dropout=0.3).train()
    compiled_model.load_state_dict(eager.state_dict())
    compiled = compile_for_training(compiled_model)
    images = torch.rand(3, 1, 32, 64, generator=torch.Generator().manual_seed(1))
    L = eager.cfg.max_len
    if kind == "ar":  # BOS, 8 tokens, EOS, PAD after
        tokens = torch.full((3, L), TokenVocab.PAD, dtype=torch.long)
        tokens[:, 1:9] = torch.randint(TokenVocab.UNK + 1, 15, (3, 8))
        tokens[:, 0], tokens[:, 9] = TokenVocab.BOS, TokenVocab.EOS
        batch = {"tokens": tokens}
    else:
        batch = {"symbols": torch.randint(3, 20, (3, L)), "modifiers": torch.randint(3, 7, (3, L))}
    for step in range(2):
        b = {**batch, **eager.step_inputs(step)}
        b.update(eager.draws(b, torch.Generator().manual_seed(step)))
        torch.manual_seed(10 + step)
        a = eager(images, b)["loss"]
        torch.manual_seed(10 + step)
        c = compiled(images, b)["loss"]
        assert float(c.detach()) == pytest.approx(float(a.detach()), rel=1e-4), step
        a.backward()
        c.backward()
        for (name, p), q in zip(eager.named_parameters(), compiled_model.parameters()):
            if p.grad is not None:
                assert torch.allclose(p.grad, q.grad, rtol=1e-3, atol=1e-5), name


def test_training_options_keep_the_mode_and_use_the_eager_generator_on_the_cpu():
    from train.compiled import training_options

    model = tiny_model()
    assert training_options(model) == {"options": {"fallback_random": True}}
    spelled = training_options(model, "max-autotune")["options"]
    assert spelled["fallback_random"] is True and spelled["max_autotune"] is True


def test_compiled_decoding_gives_the_eager_outputs():
    from train.compiled import compile_for_decoding

    torch.manual_seed(0)
    model = tiny_model().eval()
    fast = compile_for_decoding(tiny_model().eval())
    fast.load_state_dict(model.state_dict())  # the compiled parts keep their parameter names
    images = torch.rand(3, 1, 32, 64, generator=torch.Generator().manual_seed(1))
    for spec in (DecodeSpec("mask-predict", T=4), DecodeSpec("remask", T=4, seed=2)):
        assert fast.recognize(images, spec) == model.recognize(images, spec)


def test_compiled_ar_decoding_runs_one_graph_for_every_position():
    """The AR baseline compiled for decoding steps on preallocated caches: one decoder graph, not one
    per position, and the eager outputs."""
    from torch._dynamo.utils import counters

    from train.compiled import compile_for_decoding

    torch.manual_seed(0)
    model = tiny_model("ar").eval()
    with torch.no_grad():
        model.decoder.head.weight.mul_(8)
    fast = compile_for_decoding(tiny_model("ar").eval())
    fast.load_state_dict(model.state_dict())
    images = torch.rand(3, 1, 32, 64, generator=torch.Generator().manual_seed(1))
    torch._dynamo.reset()
    counters.clear()
    assert fast.decode_ids(images, DecodeSpec("greedy")).tolist() == model.decode_ids(images, DecodeSpec("greedy")).tolist()
    assert counters["stats"]["unique_graphs"] == 2  # the encoder's and the decoder step's


def test_bf16_autocast_trains_on_the_cpu_when_asked(micro_data, tmp_path, capsys, monkeypatch):  # noqa: F811
    import train.trainer as trainer
    from train.trainer import train

    monkeypatch.setattr(trainer, "cpu_bf16_native", lambda: True)  # emulated where the CPU lacks it: slow, same path
    torch.set_num_threads(1)
    common = ("max_steps=3", "log_every=1", "ckpt_every=0")
    train(micro_cfg(micro_data, tmp_path / "fp32", *common))
    train(micro_cfg(micro_data, tmp_path / "bf16", *common, "bf16=true"))
    assert "bf16" in capsys.readouterr().out
    fp32, bf16 = _losses(tmp_path / "fp32"), _losses(tmp_path / "bf16")
    assert bf16[1] != fp32[1] and bf16[1] == pytest.approx(fp32[1], rel=0.05)  # bf16 matmuls: close, not equal


def test_bf16_falls_back_to_fp32_on_a_cpu_without_bf16(micro_data, tmp_path, capsys, monkeypatch):  # noqa: F811
    import train.trainer as trainer
    from train.trainer import train

    monkeypatch.setattr(trainer, "cpu_bf16_native", lambda: False)
    torch.set_num_threads(1)
    common = ("max_steps=2", "log_every=1", "ckpt_every=0")
    train(micro_cfg(micro_data, tmp_path / "fp32", *common))
    train(micro_cfg(micro_data, tmp_path / "bf16", *common, "bf16=true"))
    assert "has no bf16 instructions" in capsys.readouterr().out
    assert _losses(tmp_path / "bf16") == _losses(tmp_path / "fp32")


def test_predict_with_compile_reads_what_predict_reads(micro_data, tmp_path):  # noqa: F811
    import json

    from train import predict
    from train.trainer import train

    torch.set_num_threads(1)
    ckpt = train(micro_cfg(micro_data, tmp_path / "run", "max_steps=60", "log_every=30", "ckpt_every=0"))
    inks = sorted(str(p) for p in (micro_data.parent / "ink").rglob("*.inkml"))
    outs = []
    for extra in ([], ["--compile"]):
        jsonl = tmp_path / f"p{len(outs)}.jsonl"
        assert predict.main(["--ckpt", str(ckpt), *inks, "--sampler", "mask-predict", "--T", "4",
                             "--jsonl", str(jsonl), *extra]) == 0
        outs.append([json.loads(line)["latex"] for line in jsonl.read_text().splitlines()])
    assert outs[0] == outs[1] and len(outs[0]) == len(inks)


def test_compiled_parts_follow_the_eager_losses(micro_data, tmp_path, capsys):  # noqa: F811
    """compile_parts compiles HVT's coverage attention alone: the eager step keeps its trimmed window
    and its losses, to float rounding; the checkpoint keeps the parameter names."""
    from model.checkpoint import load_checkpoint
    from train.trainer import train

    torch.set_num_threads(1)
    common = ("max_steps=4", "log_every=1", "ckpt_every=0", "model.kind=hvt", "model.max_len=24")
    train(micro_cfg(micro_data, tmp_path / "eager", *common))
    capsys.readouterr()
    train(micro_cfg(micro_data, tmp_path / "parts", *common, "compile_parts=true"))
    assert "(compiled: decoder.attn)" in capsys.readouterr().out
    eager, parts = _losses(tmp_path / "eager"), _losses(tmp_path / "parts")
    assert sorted(parts) == [1, 2, 3, 4]
    for step in eager:
        assert parts[step] == pytest.approx(eager[step], rel=1e-4), step
    names = lambda out: sorted(load_checkpoint(out / "ckpt.pt")["model"])  # noqa: E731
    assert names(tmp_path / "parts") == names(tmp_path / "eager")


def test_compile_parts_without_a_compiler_trains_eager_and_says_why(micro_data, tmp_path, capsys, monkeypatch):  # noqa: F811
    import train.trainer as trainer

    monkeypatch.setattr(trainer, "compiler_works", lambda: "InvalidCxxCompiler: no working C++ compiler found")
    torch.set_num_threads(1)
    trainer.train(micro_cfg(micro_data, tmp_path / "r", "max_steps=2", "log_every=1", "ckpt_every=0",
                            "model.kind=hvt", "model.max_len=24", "compile_parts=true"))
    out = capsys.readouterr().out
    assert "compile_parts off: torch.compile cannot build here (InvalidCxxCompiler" in out
    assert "(compiled:" not in out and sorted(_losses(tmp_path / "r")) == [1, 2]


def test_compile_parts_leaves_recognizers_without_parts_alone(micro_data, tmp_path, capsys):  # noqa: F811
    from train.trainer import train

    torch.set_num_threads(1)
    train(micro_cfg(micro_data, tmp_path / "r", "max_steps=1", "ckpt_every=0", "model.kind=ar", "compile_parts=true"))
    assert "compiled" not in capsys.readouterr().out.split("world")[0]


def test_compile_on_a_recognizer_with_parts_compiles_the_parts_and_keeps_the_trim(micro_data, tmp_path, capsys):  # noqa: F811
    """compile=true (the CUDA default) on HVT: its parts, not one graph of an unrolled LSTM loop; the
    step still trims its window."""
    from train.trainer import Env, Trainer

    torch.set_num_threads(1)
    cfg = micro_cfg(micro_data, tmp_path / "r", "max_steps=1", "ckpt_every=0", "model.kind=hvt", "model.max_len=24",
                    "compile=true")
    trainer = Trainer(cfg, Env(torch.device("cpu"), compile=True), None, lambda m, step: {})
    assert trainer.compiled_parts == ("decoder.attn",) and not trainer.whole_compiled
    assert trainer.module is trainer.model
    batch = next(iter(trainer._loader(torch.Generator().manual_seed(0))))
    trimmed = trainer.model.trim_padding({"tokens": batch["tokens"]})["tokens"].shape[1]
    assert trimmed < batch["tokens"].shape[1]
    trainer.train_step(batch)


def test_a_compiled_token_loss_builds_one_graph_per_window(micro_data, tmp_path):  # noqa: F811
    """compile=true on the AR baseline: each step's window is cut to one of `compile_windows` widths, so
    the run compiles one graph of its loss per width its batches need, and its losses are the eager
    run's (which cuts exactly) to float rounding. The micro labels take 8 or 9 columns (BOS, EOS
    included): with 18 windows of an 18-column window each length is its own width (two graphs), with
    two windows both round up to 9 (one graph)."""
    from torch._dynamo.utils import counters

    from train.trainer import train

    torch.set_num_threads(1)
    common = ("max_steps=8", "log_every=1", "ckpt_every=0", "model.kind=ar", "model.max_len=18", "batch_size=1")
    train(micro_cfg(micro_data, tmp_path / "eager", *common, "compile=false"))
    graphs = {}
    for windows in (2, 18):
        torch._dynamo.reset()
        counters.clear()
        train(micro_cfg(micro_data, tmp_path / f"w{windows}", *common, "compile=true", f"compile_windows={windows}"))
        graphs[windows] = counters["stats"]["unique_graphs"]
    assert graphs == {2: 1, 18: 2}
    eager, compiled = _losses(tmp_path / "eager"), _losses(tmp_path / "w2")
    for step in eager:
        assert compiled[step] == pytest.approx(eager[step], rel=1e-4), step


def test_compile_windows_must_be_positive():
    from train.config import apply_overrides, preset

    with pytest.raises(ValueError, match="compile_windows must be >= 1"):
        apply_overrides(preset("micro"), ["compile_windows=0"])
