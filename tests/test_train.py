"""Trainer tests on MICRO shards written by the project's own synthesizer and converter:
overfit to exact match, exact resume, 2-process CPU DDP, checkpoint errors, the eval/predict CLIs."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from model import CheckpointError, DecodeSpec, load, load_checkpoint
from train.config import apply_overrides, from_dict, preset, stored_eval_splits, to_dict
from conftest import Payload

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def micro_data(tmp_path_factory) -> Path:
    """Four synthetic inks as 64x64 shards (split train)."""
    from datasets_prep.inkml import convert
    from datasets_prep.synth import generate

    root = tmp_path_factory.mktemp("micro")
    labels = ["x^{2}+1", "\\frac{a}{b}", "\\sqrt{y}-3", "z_{i}=0"]
    generate(0, root / "ink", labels=labels, seed=3, fmt="mathwriting", split="train")
    convert("mathwriting", inputs=[root / "ink"], out=root / "shards", size=(64, 64), workers=1, progress=False)
    return root / "shards"


def micro_cfg(data: Path, out: Path, *overrides: str):
    cfg = apply_overrides(preset("micro"), list(overrides))
    cfg.data.root, cfg.out = str(data), str(out)
    return cfg


def _losses(out: Path) -> dict[int, float]:
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r["loss"] for r in rows if "loss" in r}


def test_config_overrides_and_round_trip():
    cfg = apply_overrides(preset("crohme-cpu"), ["lr=3e-4", "model.enc_depth=2", "model.loss.T=7",
                                                 "canvas=64x128", "eval_splits=a,b", "compile=auto",
                                                 "augment.prob=0.5", "augment.scale=0.8,1.0"])
    assert cfg.optim.lr == 3e-4 and cfg.model.enc_depth == 2 and cfg.model.loss.T == 7
    assert cfg.data.canvas == (64, 128) and cfg.eval.splits == ("a", "b") and cfg.compile is None
    assert cfg.augment.prob == 0.5 and cfg.augment.scale == (0.8, 1.0)
    assert from_dict(json.loads(json.dumps(to_dict(cfg)))) == cfg
    with pytest.raises(ValueError, match="unknown config key"):
        apply_overrides(cfg, ["model.nope=1"])
    with pytest.raises(ValueError, match="bad value"):
        apply_overrides(cfg, ["max_steps=1.5"])


def test_evaluation_keys_are_one_group_and_their_old_flat_spelling_still_reads():
    """eval.* groups what the evaluations score; `eval_T=...` (the spelling before) is the same key, as
    override and in a stored config (the shipped weights' checkpoints were written with it)."""
    new = apply_overrides(preset("crohme-cpu"), ["eval.T=1,20", "eval.splits=x", "eval.beams=1,5", "eval.every=7"])
    old = apply_overrides(preset("crohme-cpu"), ["eval_T=1,20", "eval_splits=x", "eval_beams=1,5", "eval_every=7"])
    assert new == old and new.eval.T == (1, 20) and new.eval.splits == ("x",) and new.eval.every == 7
    flat = to_dict(new)
    flat.update({f"eval_{k}": v for k, v in flat.pop("eval").items()})
    assert from_dict(flat) == new
    assert stored_eval_splits(flat) == stored_eval_splits(to_dict(new)) == ("x",)
    assert not any(k.startswith("eval_") for k in to_dict(new))


def test_data_keys_are_one_group_and_their_old_flat_spelling_still_reads():
    new = apply_overrides(preset("crohme-cpu"), ["data.root=x", "data.extra=a,b", "data.workers=0",
                                                 "data.normalize_labels=false", "data.canvas=64x128"])
    old = apply_overrides(preset("crohme-cpu"), ["data=x", "extra_train=a,b", "num_workers=0",
                                                 "normalize_labels=false", "canvas=64x128"])
    assert new == old and new.data.root == "x" and new.data.extra == ("a", "b") and new.data.canvas == (64, 128)
    flat = to_dict(new)
    dat = flat.pop("data")
    assert dat.pop("length_buckets") == 0   # added after the grouping: no flat spelling, a config without it reads 0
    flat.update({"data": dat.pop("root"), "extra_train": dat.pop("extra"), "num_workers": dat.pop("workers"), **dat})
    assert from_dict(flat) == new


def test_optimisation_keys_are_one_group_and_their_old_flat_spelling_still_reads():
    new = apply_overrides(preset("paper"), ["optim.lr=3e-4", "optim.name=sgd", "optim.milestones=10,20", "optim.ema=0.9"])
    old = apply_overrides(preset("paper"), ["lr=3e-4", "optimizer=sgd", "lr_milestones=10,20", "ema=0.9"])
    assert new == old and new.optim.milestones == (10.0, 20.0) and new.optim.name == "sgd"
    flat = to_dict(new)
    opt = flat.pop("optim")
    flat.update({"optimizer": opt.pop("name"), "lr_milestones": opt.pop("milestones"), **opt})
    assert from_dict(flat) == new


def test_float_fields_take_fractions_where_a_preset_set_a_whole_number():
    """crohme-cpu sets max_minutes=50 (an int); the field is a float, so 2.5 must be accepted."""
    base = preset("crohme-cpu")
    assert isinstance(base.max_minutes, int) and isinstance(base.pretrain.max_minutes, int)
    cfg = apply_overrides(base, ["max_minutes=2.5", "pretrain.max_minutes=0.25", "batch_size=64"])
    assert cfg.max_minutes == 2.5 and cfg.pretrain.max_minutes == 0.25 and cfg.batch_size == 64
    with pytest.raises(ValueError, match="expected an integer"):
        apply_overrides(base, ["batch_size=1.5"])


def test_micro_overfits_to_exact_match(micro_data, tmp_path):
    from train.eval import evaluate_splits
    from train.trainer import train

    torch.set_num_threads(1)
    ckpt = train(micro_cfg(micro_data, tmp_path / "run", "max_steps=600", "log_every=100"))
    res = evaluate_splits(load(ckpt).recognizer, micro_data, ["train"],
                          [DecodeSpec("remask", T=10, seed=0), DecodeSpec("mask-predict", T=10)])
    metrics = res["train"]["metrics"]
    assert metrics["remask-T10"]["em"] == 1.0, res["train"]["predictions"]
    assert metrics["mask-predict-T10"]["em"] == 1.0
    assert metrics["remask-T10"]["cer"] == 0.0


def test_resume_gives_the_same_next_losses(micro_data, tmp_path):
    from train.trainer import train

    torch.set_num_threads(1)
    common = ("log_every=1", "model.dropout=0.1", "ckpt_every=0", "augment.prob=0.5", "degrade.prob=0.5")
    train(micro_cfg(micro_data, tmp_path / "straight", "max_steps=8", *common))
    train(micro_cfg(micro_data, tmp_path / "split", "max_steps=4", *common))
    train(micro_cfg(micro_data, tmp_path / "split", "max_steps=8", *common))  # resumes from step 4
    straight, split = _losses(tmp_path / "straight"), _losses(tmp_path / "split")
    assert sorted(split) == list(range(1, 9))
    for step in range(5, 9):
        assert split[step] == pytest.approx(straight[step], rel=1e-6, abs=1e-7), step
    assert load_checkpoint(tmp_path / "split" / "ckpt.pt")["step"] == 8


def test_two_process_ddp_keeps_parameters_in_sync(micro_data, tmp_path):
    out = tmp_path / "ddp"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29517",
           "-m", "train.run", "--config", "micro", "--data", str(micro_data), "--out", str(out), "--no-eval",
           "max_steps=6", "batch_size=8", "ddp_check=true", "threads=1"]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    d0, d1 = (out / "params.rank0").read_text(), (out / "params.rank1").read_text()
    assert d0 == d1
    assert "world 2" in proc.stdout


def _torchrun(micro_data: Path, out: Path, port: int, *overrides: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(port),
           "-m", "train.run", "--config", "micro", "--data", str(micro_data), "--out", str(out), "--no-eval",
           "batch_size=8", "ddp_check=true", "threads=1", *overrides]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def test_two_process_ddp_resume_is_exact(micro_data, tmp_path):
    """Each rank restores its own RNG state: with dropout on, a 2-process run stopped at step 3 and
    resumed to step 6 ends with the very parameters of a run that never stopped."""
    common = ("model.dropout=0.2", "ckpt_every=0", "log_every=1")
    _torchrun(micro_data, tmp_path / "straight", 29531, "max_steps=6", *common)
    _torchrun(micro_data, tmp_path / "split", 29532, "max_steps=3", *common)
    _torchrun(micro_data, tmp_path / "split", 29533, "max_steps=6", *common)
    straight = (tmp_path / "straight" / "params.rank0").read_text()
    assert (tmp_path / "split" / "params.rank0").read_text() == straight
    assert (tmp_path / "split" / "params.rank1").read_text() == straight
    assert len(load_checkpoint(tmp_path / "split" / "ckpt.pt")["rng"]) == 2


def test_corrupt_and_missing_checkpoints_give_clear_errors(micro_data, tmp_path):
    from train.trainer import train

    ckpt = train(micro_cfg(micro_data, tmp_path / "run", "max_steps=2"))
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(ckpt.read_bytes()[: ckpt.stat().st_size // 2])
    with pytest.raises(CheckpointError, match="truncated.pt"):
        load_checkpoint(truncated)
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": torch.zeros(2)}, foreign)
    with pytest.raises(CheckpointError, match="not a gryphone checkpoint"):
        load_checkpoint(foreign)
    (tmp_path / "empty.pt").write_bytes(b"")
    for bad in (truncated, tmp_path / "empty.pt", tmp_path / "missing.pt"):
        proc = subprocess.run([sys.executable, "-m", "train.eval", "--ckpt", str(bad), "--data", str(micro_data)],
                              cwd=REPO, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1
        assert bad.name in proc.stderr and "Traceback" not in proc.stderr


def test_eval_and_predict_clis(micro_data, tmp_path):
    from datasets_prep.render import png_bytes, render_ink
    from datasets_prep.readers import read_inkml
    from train.trainer import train

    ckpt = train(micro_cfg(micro_data, tmp_path / "run", "max_steps=3"))
    report = tmp_path / "eval.json"
    proc = subprocess.run([sys.executable, "-m", "train.eval", "--ckpt", str(ckpt), "--data", str(micro_data),
                           "--splits", "train", "--T", "1,2", "--seeds", "2", "--json", str(report)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(report.read_text())["results"]["train"]["metrics"]
    assert set(res) == {"remask-T1", "remask-T2", "mask-predict-T1", "mask-predict-T2"}
    assert res["remask-T2"]["seeds"] == 2 and "em_std" in res["remask-T2"]
    inks = sorted((micro_data.parent / "ink" / "train").glob("*.inkml"))
    png = tmp_path / "x.png"
    png.write_bytes(png_bytes(render_ink(read_inkml(inks[0].read_bytes(), str(inks[0])), size=(64, 64))))
    garbage = tmp_path / "garbage.png"
    garbage.write_bytes(b"\x00not an image")
    proc = subprocess.run([sys.executable, "-m", "train.predict", "--ckpt", str(ckpt), str(inks[0]), str(png),
                           str(garbage)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1  # one file failed, the others were recognized
    lines = proc.stdout.strip().splitlines()
    assert [line.split("\t")[0] for line in lines] == [str(inks[0]), str(png)]
    assert "garbage.png" in proc.stderr and "Traceback" not in proc.stderr


def test_training_data_accounts_for_every_left_out_sample(micro_data):
    from tokenizer.label_spec import LabelSpec
    from train.data import load_split_data

    labels = LabelSpec.build("sat", ["x^{2}+1"])
    enc = lambda t: {"symbols": labels.vocab.encode(t, 3).symbols}  # noqa: E731
    data = load_split_data(micro_data / "train", enc, 3, labels=labels)
    # labels longer than 3 positions are left out and counted, never dropped silently
    assert len(data.rows) + sum(data.skipped.values()) == 4
    assert data.skipped["too-long"] >= 1
    kept = load_split_data(micro_data / "train", enc, 3, labels=labels, keep_all=True)
    assert len(kept.rows) == 4


def test_epoch_batches_are_deterministic_and_rank_disjoint():
    from train.data import epoch_batches

    a = epoch_batches(100, 8, seed=1, epoch=3)
    assert a == epoch_batches(100, 8, seed=1, epoch=3) and a != epoch_batches(100, 8, seed=1, epoch=4)
    r0, r1 = epoch_batches(100, 8, 1, 3, rank=0, world=2), epoch_batches(100, 8, 1, 3, rank=1, world=2)
    for g, x, y in zip(a, r0, r1):
        assert sorted(g) == sorted(x + y) and not set(x) & set(y)
    assert len(np.unique(np.concatenate(a))) == 96


def test_decoder_reads_the_image_not_just_the_label_statistics(micro_data, tmp_path):
    """After a short training, all-masked symbol accuracy with the true images must clearly beat the
    same with blank images: a decoder that ignores its encoder fails this (fixed seeds, no timing)."""
    from train.data import ShardDataset, collate, load_split_data
    from train.trainer import train

    torch.set_num_threads(1)
    ckpt = train(micro_cfg(micro_data, tmp_path / "run", "max_steps=400", "log_every=100"))
    model = load(ckpt).recognizer
    data = load_split_data(micro_data / "train", model.targets, model.cfg.max_len, labels=model.labels)
    batch = collate([ShardDataset(data, model.render.size)[i] for i in range(len(data.rows))])
    real = batch["symbols"] != 0

    def accuracy(images: torch.Tensor) -> float:
        masked = torch.full_like(batch["symbols"], 1)  # every position MASK
        with torch.no_grad():
            logits = model.decoder(masked, masked, model.decoder.memory_kv(model.encoder(images)))["sym"]
        return float((logits.argmax(-1) == batch["symbols"])[real].float().mean())

    seeing, blind = accuracy(batch["image"]), accuracy(torch.zeros_like(batch["image"]))
    assert seeing >= 0.9 and seeing - blind >= 0.3, (seeing, blind)


def test_two_stage_run_pretrains_the_encoder_then_trains_gryphone_with_the_reader(micro_data, tmp_path, capsys):
    from train.run import main

    out = tmp_path / "two"
    code = main(["--config", "micro", "--data", str(micro_data), "--out", str(out), "--no-eval", "threads=1",
                 "pretrain.steps=6", "max_steps=4", "log_every=2", "model.aux_reader_weight=0.5"])
    assert code == 0
    log = capsys.readouterr().out
    pre = out / "pretrain" / "ckpt.pt"
    assert "[pretrain] stage 1" in log and f"encoder starts from {pre}" in log
    assert load_checkpoint(pre)["step"] == 6 and load_checkpoint(pre)["train_config"]["model"]["kind"] == "ar"
    state = load_checkpoint(out / "ckpt.pt")
    assert state["step"] == 4 and state["train_config"]["model"]["encoder_init"] == str(pre)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert all("reader_ce" in r for r in rows if "loss" in r)
    # a second call resumes both stages as finished: nothing retrains
    assert main(["--config", "micro", "--data", str(micro_data), "--out", str(out), "--no-eval", "threads=1",
                 "pretrain.steps=6", "max_steps=4", "log_every=2", "model.aux_reader_weight=0.5"]) == 0
    assert load_checkpoint(out / "ckpt.pt")["step"] == 4


def test_a_bad_encoder_init_is_one_clear_error(micro_data, tmp_path):
    bad = tmp_path / "dino.pth"
    bad.write_bytes(b"\x80\x04garbage")
    proc = subprocess.run([sys.executable, "-m", "train.run", "--config", "micro", "--data", str(micro_data),
                           "--out", str(tmp_path / "run"), f"model.encoder_init={bad}"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "dino.pth" in proc.stderr and "Traceback" not in proc.stderr




def test_a_checkpoint_that_carries_code_is_refused_everywhere_and_never_runs(micro_data, tmp_path):
    import pickle

    marker = tmp_path / "payload-ran"
    raw = tmp_path / "raw.pt"
    raw.write_bytes(pickle.dumps({"format": "gryphone-checkpoint-1", "x": Payload(str(marker))}))
    zipped = tmp_path / "zipped.pt"
    torch.save({"format": "gryphone-checkpoint-1", "model": Payload(str(marker))}, zipped)
    for path in (raw, zipped):
        with pytest.raises(CheckpointError, match=f"{path.name}: refused"):
            load_checkpoint(path)
        proc = subprocess.run([sys.executable, "-m", "train.predict", "--ckpt", str(path), "x.png"],
                              cwd=REPO, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1 and path.name in proc.stderr and "Traceback" not in proc.stderr
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(zipped, run / "ckpt.pt")  # train.run resumes automatically from out/ckpt.pt
    proc = subprocess.run([sys.executable, "-m", "train.run", "--config", "micro", "--data", str(micro_data),
                           "--out", str(run)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "refused" in proc.stderr and "Traceback" not in proc.stderr
    assert not marker.exists()


def test_a_killed_checkpoint_write_leaves_no_stray_file(tmp_path):
    from model.checkpoint import save_checkpoint

    stray, stray2 = tmp_path / "ckpt.pt.tmp12345", tmp_path / ".ckpt.pt.tmp-12345"
    stray.write_bytes(b"half a checkpoint")
    stray2.write_bytes(b"half a checkpoint")
    save_checkpoint(tmp_path / "ckpt.pt", {"train_config": {}, "model": {}, "vocab": {}, "step": 0})
    assert not stray.exists() and not stray2.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt"]


def test_a_resume_with_a_changed_schedule_says_so(micro_data, tmp_path, capsys):
    from train.trainer import train

    train(micro_cfg(micro_data, tmp_path / "run", "max_steps=3"))
    capsys.readouterr()
    train(micro_cfg(micro_data, tmp_path / "run", "max_steps=5"))
    out = capsys.readouterr().out
    assert "changed schedule (max_steps 3 -> 5)" in out
    train(micro_cfg(micro_data, tmp_path / "run", "max_steps=5"))
    assert "changed schedule" not in capsys.readouterr().out


def test_shards_for_another_canvas_are_one_clear_error_at_start(micro_data, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "train.run", "--config", "micro", "--data", str(micro_data),
                           "--out", str(tmp_path / "run"), "canvas=32x32"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "the shards are 64x64 images but canvas is 32x32" in proc.stderr


def test_predict_builds_for_an_inkml_file_the_tensor_training_reads(tmp_path):
    """Shards made with non-default render settings: predict must draw the file the same way."""
    from datasets_prep.inkml import convert
    from datasets_prep.synth import generate
    from train.data import ShardDataset, load_split_data
    from train.predict import load_input
    from train.trainer import train

    root = tmp_path / "styled"
    generate(0, root / "ink", labels=["x^{2}+1", "\\frac{a}{b}"], seed=5, fmt="mathwriting", split="train")
    convert("mathwriting", inputs=[root / "ink"], out=root / "shards", size=(64, 64), workers=1, progress=False,
            stroke_width=3.5, margin=5.0, antialias="best", max_glyph=9.0)
    ckpt = train(micro_cfg(root / "shards", tmp_path / "run", "max_steps=1"))
    loaded = load(ckpt)
    assert loaded.state["render"] == {"size": [64, 64], "stroke_width": 3.5, "margin": 5.0, "antialias": "best",
                                      "binarize": False, "max_glyph": 9.0}
    model = loaded.recognizer
    data = load_split_data(root / "shards" / "train", model.targets, model.cfg.max_len, labels=model.labels,
                           keep_all=True)
    dataset = ShardDataset(data, loaded.render.size)
    paths = data.table.column("path").to_pylist()
    for i in range(len(dataset)):
        ink_file = root / "ink" / paths[int(data.rows[i])]
        got, reference = load_input(ink_file, loaded.render)
        assert torch.equal(got, dataset[i]["image"]), ink_file
        assert reference == dataset[i]["latex"]


def test_the_canvas_follows_the_shards_unless_the_command_line_sets_it(micro_data, tmp_path, capsys):
    """`--config tiny` on 64x64 shards trains at 64x64 and says so; an explicit canvas that
    disagrees is one clear error, exit 1, no traceback."""
    from train.run import main

    args = ["--config", "tiny", "--data", str(micro_data), "--no-eval", "--fresh", "max_steps=1", "batch_size=2",
            "pretrain.steps=0", "threads=1"]
    assert main(args + ["--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "canvas 64x64" in out
    assert main(args + ["--out", str(tmp_path / "b"), "canvas=224x224"]) == 1
    err = capsys.readouterr().err
    assert "the shards are 64x64 images but canvas is 224x224" in err and "Traceback" not in err
