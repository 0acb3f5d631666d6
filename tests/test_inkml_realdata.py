"""All of ../shared/data/crohme (~11k files, every package quirk) and mathwriting, each converted once
(module-scoped), then checked: every file accounted for, shards loadable, rows equal to a re-read."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from datasets_prep.inkml import convert
from datasets_prep.readers import read_inkml
from datasets_prep.sources import target_label
from datasets_prep.render import png_bytes, render_ink
from datasets_prep.shards import load_split

CROHME_INPUTS = ("train", "test2014", "test2016", "no_truth")
pytestmark = pytest.mark.realdata


def _inkml(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.suffix.lower() == ".inkml"]


@pytest.fixture(scope="module")
def crohme(shared_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("crohme") / "shards"
    inputs = [shared_data / "crohme" / d for d in CROHME_INPUTS]
    return out, inputs, convert("crohme", inputs, out, workers=2, preview=16)


@pytest.fixture(scope="module")
def mathwriting(shared_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("mw") / "shards"
    return out, convert("mathwriting", [shared_data / "mathwriting"], out, workers=1, keep_ink=True)


@pytest.mark.slow
def test_crohme_every_file_is_a_row_or_a_quarantine_line(crohme):
    out, inputs, s = crohme
    n_files = {p.name: len(_inkml(p)) for p in inputs}
    assert s["split_names"] == ["train", "test2014", "test2016", "no_truth"]
    for split, n in n_files.items():
        v = s["splits"][split]
        assert v["inputs"] == n and v["rows"] + v["quarantined"] == n
        assert load_split(out / split).num_rows == v["rows"]
    q = [json.loads(line) for line in (out / "quarantine.jsonl").read_text().splitlines()]
    assert len(q) == 34
    assert {(r["stage"], r["kind"]) for r in q if "no_truth" in r["path"]} == {("label", "no-label")}
    [empty] = [r for r in q if "no_truth" not in r["path"]]
    assert empty["path"] == "train/MfrDB/MfrDB3088.inkml" and empty["kind"] == "empty-file"
    assert s["errors"] == {"label:no-label": 33, "read:empty-file": 1}


@pytest.mark.slow
def test_crohme_rows_match_a_fresh_read(crohme, shared_data):
    out, _, _ = crohme
    table = load_split(out / "test2016")
    rng = random.Random(0)
    for i in rng.sample(range(table.num_rows), 40):
        row = table.slice(i, 1).to_pylist()[0]
        p = shared_data / "crohme" / row["path"]
        ink = read_inkml(p.read_bytes(), str(p))
        assert row["image"]["bytes"] == png_bytes(render_ink(ink))
        assert (row["latex"], row["latex_raw"]) == target_label(ink, "crohme")
        assert row["num_points"] == ink.num_points


@pytest.mark.slow
def test_crohme_loads_with_datasets_and_preview_exists(crohme):
    import datasets

    out, _, s = crohme
    dd = datasets.load_from_disk(str(out))
    assert {k: v.num_rows for k, v in dd.items()} == {k: v["rows"] for k, v in s["splits"].items()}
    assert (out / "preview.png").stat().st_size > 10_000


def test_mathwriting_excerpt(mathwriting, shared_data):
    out, s = mathwriting
    assert s["splits"]["train"]["rows"] == 4 and s["splits"]["valid"]["rows"] == 4
    rows = load_split(out / "train").to_pylist()
    by_id = {r["sample_id"]: r for r in rows}
    syn = by_id["00015681597577ca"]  # the synthetic ink the excerpt merged into train/
    assert syn["latex"] == "g(x)=G^{\\prime}(x)=0" and syn["latex_raw"] == "g(x) = G'(x) = 0"
    assert json.loads(syn["annotations"])["splitTagOriginal"] == "synthetic"
    matrix = by_id["059225965e1e5dd6"]
    assert "&" in matrix["latex"] and "&amp;" not in matrix["latex"]
    for r in rows:  # --keep-ink strokes are the file's X Y T, exactly
        p = shared_data / "mathwriting" / r["path"]
        ink = read_inkml(p.read_bytes(), str(p))
        assert [len(s) for s in r["strokes"]] == [len(s) for s in ink.strokes]
        assert r["strokes"][0][0] == ink.strokes[0][0].tolist()
