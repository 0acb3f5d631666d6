"""train.predict and train.eval on bad command lines and impossible checkpoints: one line, the
documented exit code (2 for the command line, 1 for an unusable file), never a traceback."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from builders import tiny_model
from model import CheckpointError, load
from model.checkpoint import FORMAT, save_checkpoint
from train.config import preset, to_dict

REPO = Path(__file__).resolve().parents[1]


def _save(path: Path, model, **overrides) -> Path:
    cfg = preset("micro")
    cfg.model = model.cfg
    state = {"train_config": to_dict(cfg), "model_config": to_dict(cfg)["model"], "render": model.render.to_dict(),
             "labels": model.labels.to_dict(), "model": model.state_dict(), "ema": None, "step": 0}
    state.update(overrides)
    save_checkpoint(path, state)
    return path


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory) -> Path:
    torch.manual_seed(0)
    return _save(tmp_path_factory.mktemp("ck") / "ckpt.pt", tiny_model(canvas=(32, 64)))


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_a_fresh_checkpoint_loads(ckpt):
    loaded = load(ckpt)
    assert loaded.state["format"] == FORMAT and loaded.render.size == (32, 64)


@pytest.mark.parametrize("args,message", [
    (["--T", "0"], "--T: must be >= 1"),
    (["--T", "-1"], "--T: must be >= 1"),
    (["--beam", "0"], "--beam: must be >= 1"),
    (["--sampler", "greedy"], "decodes with remask"),
    (["--device", "tpu"], "invalid choice"),
])
def test_predict_bad_command_lines(ckpt, tmp_path, args, message):
    proc = _run("-m", "train.predict", "--ckpt", str(ckpt), *args, str(tmp_path / "x.png"))
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_cuda_is_a_usage_error(ckpt, tmp_path):
    for module in ("train.predict", "train.eval"):
        extra = ["--data", str(tmp_path)] if module == "train.eval" else [str(tmp_path / "x.png")]
        proc = _run("-m", module, "--ckpt", str(ckpt), "--device", "cuda", *extra)
        assert proc.returncode == 2 and "no CUDA device" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("args,message", [
    (["--T", "0"], "--T must be integers >= 1"),
    (["--T", "1,x"], "--T must be comma-separated integers"),
    (["--samplers", "greedy"], "decodes with remask"),
])
def test_eval_bad_command_lines(ckpt, tmp_path, args, message):
    proc = _run("-m", "train.eval", "--ckpt", str(ckpt), "--data", str(tmp_path), *args)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_eval_json_into_a_folder_is_refused_before_any_work(ckpt, tmp_path):
    proc = _run("-m", "train.eval", "--ckpt", str(ckpt), "--data", str(tmp_path / "nowhere"), "--json", str(tmp_path))
    assert proc.returncode == 2 and "--json" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("change", [
    {"model_config": "patch"},
    {"render": {"size": [0, 0]}},
    {"render": "not a mapping"},
    {"labels": {"kind": "sat"}},
    {"model_config": "kind"},
])
def test_a_checkpoint_with_impossible_stored_values_is_refused_naming_it(tmp_path, change):
    model = tiny_model(canvas=(32, 64))
    path = tmp_path / "odd.pt"
    cfg = to_dict(preset("micro"))["model"] | {k: v for k, v in vars(model.cfg).items()}
    cfg["loss"] = vars(model.cfg.loss)
    if change.get("model_config") == "patch":
        change = {"model_config": cfg | {"patch": 0}}
    elif change.get("model_config") == "kind":
        change = {"model_config": cfg | {"kind": "nonesuch"}}
    _save(path, model, **change)
    with pytest.raises(CheckpointError, match="odd.pt"):
        load(path)
    proc = _run("-m", "train.predict", "--ckpt", str(path), str(tmp_path / "x.png"))
    assert proc.returncode == 1 and "odd.pt" in proc.stderr and "Traceback" not in proc.stderr


def test_outputs_on_a_full_disk_and_splits_outside_data_are_one_line_errors(tmp_path):
    """--jsonl /dev/full, --json /dev/full and --splits ../x end with a reason, not a traceback; --T is
    capped as on the page."""
    import os
    import subprocess
    import sys

    from serve_helpers import micro_checkpoint, micro_data

    ckpt = micro_checkpoint(tmp_path, steps=20)
    ink = sorted((micro_data(tmp_path).parent / "ink" / "train").glob("*.inkml"))[0]
    run = lambda *a: subprocess.run([sys.executable, "-m", *a], capture_output=True, text=True, timeout=300)  # noqa: E731
    cases = [(["train.eval", "--ckpt", str(ckpt), "--data", str(micro_data(tmp_path)), "--splits", "../x"],
              "not a plain name"),
             (["train.predict", "--ckpt", str(ckpt), "--T", "1000000", str(ink)], "at most")]
    if os.path.exists("/dev/full"):
        cases += [(["train.predict", "--ckpt", str(ckpt), "--jsonl", "/dev/full", str(ink)], "cannot write"),
                  (["train.eval", "--ckpt", str(ckpt), "--data", str(micro_data(tmp_path)), "--splits", "train",
                    "--T", "1", "--seeds", "1", "--json", "/dev/full"], "cannot write")]
    for argv, needle in cases:
        res = run(*argv)
        assert res.returncode != 0 and needle in res.stderr and "Traceback" not in res.stderr, (argv, res.stderr[-400:])
