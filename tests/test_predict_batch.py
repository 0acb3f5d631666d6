"""Batch recognition: folders, archives and shard folders in, one JSON line per input out, in order,
with refusals named and a throughput line at the end."""
from __future__ import annotations

import io
import json
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest
import torch

from datasets_prep.shards import load_split
from train import predict
from test_train import micro_cfg, micro_data  # noqa: F401  (the fixture)


@pytest.fixture(scope="module")
def ckpt(micro_data, tmp_path_factory) -> Path:  # noqa: F811
    from train.trainer import train

    torch.set_num_threads(1)
    return train(micro_cfg(micro_data, tmp_path_factory.mktemp("predict") / "run", "max_steps=3"))


def _inputs(micro_data: Path, root: Path) -> list[Path]:  # noqa: F811
    inks = sorted((micro_data.parent / "ink" / "train").glob("*.inkml"))
    folder = root / "folder"
    (folder / "sub").mkdir(parents=True)
    shutil.copy(inks[0], folder / "a.inkml")
    shutil.copy(inks[1], folder / "sub" / "b.inkml")
    (folder / "notes.txt").write_text("not an input")
    (folder / "sub" / "broken.png").write_bytes(b"\x89PNG broken")
    with zipfile.ZipFile(root / "inks.zip", "w") as zf:
        zf.write(inks[2], "x/c.inkml")
        zf.writestr("../escape.inkml", inks[3].read_bytes())
    with tarfile.open(root / "inks.tar.gz", "w:gz") as tf:
        data = inks[3].read_bytes()
        info = tarfile.TarInfo("d.inkml")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return [folder, root / "inks.zip", root / "inks.tar.gz", micro_data, root / "missing.png"]


def test_jsonl_has_one_line_per_input_in_order(ckpt, micro_data, tmp_path, capsys):  # noqa: F811
    paths = _inputs(micro_data, tmp_path)
    out = tmp_path / "out.jsonl"
    code = predict.main(["--ckpt", str(ckpt), *map(str, paths), "--jsonl", str(out), "--batch-size", "3"])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    ids = load_split(micro_data / "train").column("sample_id").to_pylist()
    names = [r["input"] for r in rows]
    assert names == [str(tmp_path / "folder" / "a.inkml"), str(tmp_path / "folder" / "sub" / "b.inkml"),
                     str(tmp_path / "folder" / "sub" / "broken.png"), f"{tmp_path / 'inks.zip'}:x/c.inkml",
                     f"{tmp_path / 'inks.zip'}:../escape.inkml", f"{tmp_path / 'inks.tar.gz'}:d.inkml",
                     *[f"train/{i}" for i in ids], str(tmp_path / "missing.png")]  # shard rows: split/sample_id
    refused = {r["input"]: r["refused"] for r in rows if "refused" in r}
    assert set(refused) == {names[2], names[4], names[-1]}
    assert "escapes the archive root" in refused[names[4]] and "no such file" in refused[names[-1]]
    for r in rows:
        if "latex" in r:
            assert isinstance(r["latex"], str) and 0.0 < r["confidence"] <= 1.0
    shard_rows = [r for r in rows if r["input"].startswith("train/")]
    assert len(shard_rows) == len(ids) and all(r.get("reference") for r in shard_rows)  # each carries its label
    assert code == 1  # three inputs were refused
    err = capsys.readouterr().err
    assert "recognized 8 images" in err and "images/s" in err and "3 of 11 inputs" in err
    assert capsys.readouterr().out == ""


def test_one_split_folder_reads_as_that_split_of_its_root(ckpt, micro_data, tmp_path):  # noqa: F811
    """`shards/x/train` is as good an input as `shards/x`: its rows, named train/sample_id, same output."""
    rows = {}
    for name, path in (("root", micro_data), ("split", micro_data / "train")):
        out = tmp_path / f"{name}.jsonl"
        assert predict.main(["--ckpt", str(ckpt), str(path), "--jsonl", str(out), "--sampler", "mask-predict"]) == 0
        rows[name] = [json.loads(line) for line in out.read_text().splitlines()]
    ids = load_split(micro_data / "train").column("sample_id").to_pylist()
    assert [r["input"] for r in rows["split"]] == [f"train/{i}" for i in ids]
    root_train = [r for r in rows["root"] if r["input"].startswith("train/")]
    assert rows["split"] == root_train
    broken = tmp_path / "broken" / "valid"
    broken.mkdir(parents=True)
    (broken / "state.json").write_text("{not json")
    out = tmp_path / "broken.jsonl"
    assert predict.main(["--ckpt", str(ckpt), str(broken), "--jsonl", str(out)]) == 1
    refused = json.loads(out.read_text())
    assert refused["input"] == str(broken) and "state.json" in refused["refused"]


def test_batch_size_does_not_change_the_output(ckpt, micro_data, tmp_path):  # noqa: F811
    texts = []
    for bs in ("1", "4"):
        out = tmp_path / f"b{bs}.jsonl"
        assert predict.main(["--ckpt", str(ckpt), str(micro_data), "--jsonl", str(out), "--batch-size", bs,
                             "--sampler", "mask-predict"]) == 0
        texts.append([json.loads(line)["latex"] for line in out.read_text().splitlines()])
    assert texts[0] == texts[1] and len(texts[0]) == 4


def test_bad_jsonl_path_is_a_usage_error(ckpt, tmp_path):
    with pytest.raises(SystemExit) as exc:
        predict.main(["--ckpt", str(ckpt), "x.png", "--jsonl", str(tmp_path / "no" / "such" / "out.jsonl")])
    assert exc.value.code == 2


def test_refused_inputs_are_reported_as_they_come_not_held_for_a_batch_of_images():
    """100,000 unreadable archive members once piled up (and were re-counted per member) until an image
    came; now a batch is batch_size inputs of any kind, so lines stream out in linear time."""
    from train.predict import recognize_all
    from train.predict_inputs import Input

    emitted: list[str] = []
    seen_when: dict[int, int] = {}

    def inputs():
        for i in range(200):
            seen_when[i] = len(emitted)
            yield Input(f"m{i}", error="not an image file")

    done, refused, _ = recognize_all(None, inputs(), None, 16, lambda it, latex, conf: emitted.append(it.name))
    assert (done, refused) == (0, 200) and emitted == [f"m{i}" for i in range(200)]
    assert seen_when[100] >= 96  # all but the last partial batch already out


def test_a_link_to_a_folder_outside_the_input_is_reported_not_skipped(tmp_path):
    import os

    from datasets_prep.render_spec import RenderSpec
    from train.predict_inputs import iter_inputs

    outside = tmp_path / "outside"
    outside.mkdir()
    inside = tmp_path / "in"
    inside.mkdir()
    os.symlink(outside, inside / "more")
    got = list(iter_inputs([inside], RenderSpec((32, 64))))
    assert len(got) == 1 and "leaves the input folder" in got[0].error
