"""The converter accounts for every input: archives inside folders, links, two inputs with the same
layout, and workers that outlive a killed parent. Crafted files are made by the tests."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

from datasets_prep.inkml import convert
from datasets_prep.shards import load_split
from test_inkml_readers import crohme_file

REPO = Path(__file__).resolve().parents[1]
GOOD = crohme_file(["10 10, 20 25, 30 10", "15 15"], truth="$x+1$")


def _quarantine(out: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (out / "quarantine.jsonl").read_text().splitlines()]
    return {Path(r["path"]).name: r for r in rows}


def test_nested_archives_and_links_are_quarantined_with_a_reason(tmp_path):
    src = tmp_path / "train"
    src.mkdir()
    (src / "a.inkml").write_bytes(GOOD)
    with zipfile.ZipFile(src / "more.zip", "w") as z:
        z.writestr("b.inkml", GOOD)
    (tmp_path / "outside.inkml").write_bytes(GOOD)
    os.symlink(tmp_path / "outside.inkml", src / "link.inkml")
    out = tmp_path / "shards"
    convert("crohme", inputs=[src], out=out, workers=1, progress=False)
    assert load_split(out / "train").column("path").to_pylist() == ["train/a.inkml"]
    q = _quarantine(out)
    assert set(q) == {"more.zip", "link.inkml"}
    assert "pass it as an --input" in q["more.zip"]["error"] and "symbolic link" in q["link.inkml"]["error"]


def test_two_inputs_with_the_same_layout_give_distinct_samples(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name / "train").mkdir(parents=True)
        (tmp_path / name / "train" / "x.inkml").write_bytes(GOOD)
    out = tmp_path / "shards"
    convert("crohme", inputs=[tmp_path / "a" / "train", tmp_path / "b" / "train"], out=out, workers=1,
            progress=False)
    table = load_split(out / "train")
    ids = table.column("sample_id").to_pylist()
    assert len(ids) == 2 and len(set(ids)) == 2, ids
    assert table.column("path").to_pylist() == ["train/x.inkml", "input2/train/x.inkml"]


def test_workers_exit_when_the_parent_is_killed(tmp_path):
    src = tmp_path / "train"
    src.mkdir()
    for i in range(400):
        (src / f"{i:04d}.inkml").write_bytes(GOOD)
    code = ("import sys, time; from datasets_prep.inkml import convert\n"
            "import datasets_prep.worker as w\n"
            "slow = w.convert_chunk\n"
            "def chunk(*a, **k):\n    time.sleep(60)\n    return slow(*a, **k)\n"
            "w.convert_chunk = chunk\n"
            "import datasets_prep.convert as m; m.convert_chunk = chunk\n"
            f"convert('crohme', inputs=[{str(src)!r}], out={str(tmp_path / 'out')!r}, workers=2, progress=False)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    children: list[int] = []
    for _ in range(100):  # wait for the pool to start its workers
        time.sleep(0.2)
        out = subprocess.run(["pgrep", "-P", str(parent.pid)], capture_output=True, text=True).stdout.split()
        children = [int(p) for p in out]
        if len(children) >= 2:
            break
    assert children, "the converter started no worker processes"
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.time() + 10
    alive = children
    while alive and time.time() < deadline:
        time.sleep(0.3)
        alive = [c for c in alive if os.path.exists(f"/proc/{c}") and
                 "zombie" not in Path(f"/proc/{c}/status").read_text().lower()]
    assert not alive, f"workers {alive} outlived their killed parent"


def test_two_files_with_one_sample_id_are_both_kept_and_reported(tmp_path):
    """MathWriting ids come from the `sampleId` annotation: two files that repeat one keep both rows,
    and summary.json names the repeated id."""
    ink = ('<ink xmlns="http://www.w3.org/2003/InkML"><annotation type="sampleId">{sid}</annotation>'
           '<annotation type="normalizedLabel">x</annotation><trace>0 0 0, 5 5 1, 9 2 2</trace></ink>')
    d = tmp_path / "valid"
    d.mkdir()
    (d / "a.inkml").write_text(ink.format(sid="same"))
    (d / "b.inkml").write_text(ink.format(sid="same"))
    (d / "c.inkml").write_text(ink.format(sid="other"))
    s = convert("mathwriting", [d], tmp_path / "o", size=(32, 64), workers=1)
    assert s["splits"]["valid"]["rows"] == 3
    assert s["splits"]["valid"]["duplicate_ids"] == {"ids": 1, "rows": 2, "examples": ["same"]}
