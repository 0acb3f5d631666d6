"""datasets_prep.subset: a smaller shard folder that reads as the original does, row for row."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from datasets_prep.inkml import convert
from datasets_prep.shards import load_split, split_names
from datasets_prep.subset import SUBSET_FILE, main, parse_split, subset
from datasets_prep.synth import generate


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> Path:
    """Twelve synthetic inks in `train`, four in `test`, as 32x64 shards."""
    root = tmp_path_factory.mktemp("subset-src")
    generate(12, root / "ink", seed=1, fmt="mathwriting", split="train")
    generate(4, root / "ink", seed=2, fmt="mathwriting", split="test")
    convert("mathwriting", inputs=[root / "ink"], out=root / "shards", size=(32, 64), workers=1, progress=False)
    return root / "shards"


def test_a_sample_keeps_its_rows_whole_and_in_order(shards, tmp_path):
    rec = subset(shards, tmp_path / "out", [("train", 5), ("test", None)], seed=3)
    assert split_names(tmp_path / "out") == ["train", "test"]
    src, got = load_split(shards / "train"), load_split(tmp_path / "out" / "train")
    ids = src.column("sample_id").to_pylist()
    picked = got.column("sample_id").to_pylist()
    assert len(picked) == 5 and picked == sorted(picked, key=ids.index)          # original order
    for row in range(5):                                                          # rows copied whole
        assert got.slice(row, 1).to_pylist() == src.slice(ids.index(picked[row]), 1).to_pylist()
    assert got.schema.metadata == src.schema.metadata                              # render spec kept
    assert load_split(tmp_path / "out" / "test").num_rows == load_split(shards / "test").num_rows
    assert rec["splits"] == {"train": {"rows": 5, "of": src.num_rows}, "test": {"rows": 4, "of": 4}}
    assert json.loads((tmp_path / "out" / SUBSET_FILE).read_text())["seed"] == 3
    again = subset(shards, tmp_path / "again", [("train", 5)], seed=3)           # the seed decides
    assert load_split(tmp_path / "again" / "train").column("sample_id").to_pylist() == picked
    assert again["splits"]["train"]["rows"] == 5


def test_bad_requests_are_refused_with_the_cause(shards, tmp_path, capsys):
    assert parse_split("train=7") == ("train", 7) and parse_split("valid") == ("valid", None)
    for bad in ("train=x", "train=0", "../up"):
        with pytest.raises(ValueError):
            parse_split(bad)
    assert main([str(shards), str(tmp_path / "a"), "--split", "nope"]) == 2
    assert "no split 'nope'" in capsys.readouterr().err
    assert main([str(shards), str(shards / "inside"), "--split", "train"]) == 2
    assert "inside its source" in capsys.readouterr().err
    assert main([str(shards), str(tmp_path / "b"), "--split", "train"]) == 0
    assert main([str(shards), str(tmp_path / "b"), "--split", "train"]) == 2        # not empty
    assert "not empty" in capsys.readouterr().err
    assert main([str(shards), str(tmp_path / "c"), "--split", "train", "--max-mib", "0.0001"]) == 1
    assert not (tmp_path / "c").exists() and "over --max-mib" in capsys.readouterr().err
    assert main([str(tmp_path / "nothing"), str(tmp_path / "d"), "--split", "train"]) == 2


def test_a_corrupt_source_split_leaves_no_half_copy(shards, tmp_path, capsys):
    import shutil
    src = tmp_path / "src"
    shutil.copytree(shards, src)
    shard = next((src / "test").glob("data-*.arrow"))
    shard.write_bytes(shard.read_bytes()[:100])                     # truncated
    assert main([str(src), str(tmp_path / "out"), "--split", "train=3", "--split", "test"]) == 2
    err = capsys.readouterr().err
    assert shard.name in err and "truncated" in err, err
    assert not (tmp_path / "out").exists()


def test_quantized_splits_hold_the_nearest_levels_and_nothing_else_changes(shards, tmp_path):
    import io

    import numpy as np
    from PIL import Image

    from datasets_prep.quantize import quantize_gray
    from train.data import image_to_tensor

    rec = subset(shards, tmp_path / "out", [("train", None), ("test", None)], quantize=("train",), levels=4)
    assert rec["quantized"] == {"splits": ["train"], "levels": 4}
    assert json.loads((tmp_path / "out" / SUBSET_FILE).read_text())["quantized"]["levels"] == 4
    src, got = load_split(shards / "train"), load_split(tmp_path / "out" / "train")
    assert got.schema.metadata == src.schema.metadata
    assert got.drop(["image"]).to_pylist() == src.drop(["image"]).to_pylist()
    for before, after in zip(src.column("image").to_pylist(), got.column("image").to_pylist()):
        gray = np.asarray(Image.open(io.BytesIO(before["bytes"])).convert("L"))
        with Image.open(io.BytesIO(after["bytes"])) as im:
            assert im.mode == "P" and im.size == (gray.shape[1], gray.shape[0])
        assert after["path"] == before["path"]
        ink = image_to_tensor(after["bytes"], gray.shape)[0].numpy()            # what the trainer reads
        assert np.allclose(ink, quantize_gray(gray, 4) / 3, atol=1 / 255)
    assert load_split(tmp_path / "out" / "test").to_pylist() == load_split(shards / "test").to_pylist()


def test_bad_quantize_requests_and_images_are_refused_with_the_cause(shards, tmp_path, capsys):
    import pyarrow as pa

    from datasets_prep.shards import write_dataset_dict, write_split

    assert main([str(shards), str(tmp_path / "a"), "--split", "train", "--quantize", "test"]) == 2
    assert "--quantize test: not among the copied splits" in capsys.readouterr().err
    assert main([str(shards), str(tmp_path / "b"), "--split", "train", "--quantize", "train", "--levels", "3"]) == 2
    assert "one of 2, 4, 16" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    table = load_split(shards / "train")
    images = table.column("image").combine_chunks()
    blobs = images.field("bytes").to_pylist()
    blobs[2] = b"\x89PNG\r\n\x1a\n broken"
    column = pa.StructArray.from_arrays([pa.array(blobs, pa.binary()), images.field("path")], fields=list(images.type))
    broken = tmp_path / "broken"
    write_split(broken, "train", table.set_column(table.column_names.index("image"), table.field("image"), column))
    write_dataset_dict(broken, ["train"])
    assert main([str(broken), str(tmp_path / "c"), "--split", "train", "--quantize", "train"]) == 2
    err = capsys.readouterr().err
    sid = table.column("sample_id")[2].as_py()
    assert "row 2" in err and sid in err and "not an image" in err, err
    assert not (tmp_path / "c").exists()
