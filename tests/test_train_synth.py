"""Real-hand synthetic data inside a training run (train/synth_data.py, `synth.count`): the glyph bank is
cut from the shards' own segmented training inks, the synthetic split joins the train split, eval
labels are never drawn, and a run without a bank source stops with a clear error."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from datasets_prep.shards import load_split
from tokenizer import normalize

LABELS = ["x^{2}+1", "\\frac{a}{b}", "\\sqrt{y}-3", "z_{i}=0", "a+b=c", "y-x"]


@pytest.fixture(scope="module")
def crohme_like(tmp_path_factory) -> Path:
    """Segmented CROHME-style InkML in `ink/train` and `ink/test`, converted to 64x64 shards."""
    from datasets_prep.inkml import convert
    from datasets_prep.synth import generate

    root = tmp_path_factory.mktemp("crohme_like")
    generate(0, root / "ink", labels=LABELS[:5], seed=3, fmt="crohme", split="train")
    generate(0, root / "ink", labels=[LABELS[5]], seed=4, fmt="crohme", split="test")
    convert("crohme", inputs=[root / "ink" / "train", root / "ink" / "test"], out=root / "shards", size=(64, 64),
            workers=1, progress=False)
    return root


def _run(root: Path, out: Path, *overrides: str) -> int:
    from train.run import main

    return main(["--config", "micro", "--data", str(root / "shards"), "--out", str(out), "--no-eval", "threads=1",
                 "max_steps=2", "eval.splits=test", f"synth.bank={out}/bank", f"synth.cache={out}/cache",
                 *overrides])


def test_train_inputs_finds_the_converted_train_folder(crohme_like, tmp_path):
    from train.synth_data import train_inputs

    assert train_inputs(crohme_like / "shards", "train") == crohme_like / "ink" / "train"
    assert train_inputs(crohme_like / "shards", "valid") is None
    (tmp_path / "summary.json").write_text("[not a summary")
    assert train_inputs(tmp_path, "train") is None
    (tmp_path / "summary.json").write_text(json.dumps({"inputs": [str(tmp_path / "gone" / "train")]}))
    assert train_inputs(tmp_path, "train") is None


def test_run_with_synth_builds_the_bank_from_the_shards_train_inks(crohme_like, tmp_path, capsys):
    out = tmp_path / "run"
    assert _run(crohme_like, out, "synth.count=12", "synth.recombine=0.5") == 0
    log = capsys.readouterr().out
    assert f"[synth] glyph bank from {crohme_like / 'ink' / 'train'}" in log
    split = Path(json.loads((out / "synth_split.json").read_text())["split"])
    drawn = load_split(split).column("latex").to_pylist()
    assert 0 < len(drawn) <= 12
    assert f"5 training samples from {crohme_like / 'shards' / 'train'} + {len(drawn)} from {split}" in log
    assert normalize(LABELS[5]) not in {normalize(t) for t in drawn}  # the eval label is never drawn
    # a second run finds the bank and the synthetic shards where the first left them
    stamp = split.stat().st_mtime_ns
    assert _run(crohme_like, out, "synth.count=12", "synth.recombine=0.5", "--fresh") == 0
    again = capsys.readouterr().out
    assert "glyph bank from" not in again and f"glyph bank {out}/bank ({crohme_like / 'ink' / 'train'})" in again
    assert split.stat().st_mtime_ns == stamp


def test_run_with_synth_and_no_bank_source_is_a_clear_error(crohme_like, tmp_path, capsys):
    moved = tmp_path / "shards"
    moved.mkdir()
    for part in ("train", "test", "dataset_dict.json"):
        src = crohme_like / "shards" / part
        (moved / part).symlink_to(src, target_is_directory=src.is_dir())
    assert _run(tmp_path, tmp_path / "run", "synth.count=4") == 1
    err = capsys.readouterr().err
    assert "synth.bank_input" in err and "synth.count=0" in err and "Traceback" not in err
