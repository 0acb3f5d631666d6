"""What the documentation names exists: every repository path in a code span, every `--config NAME`,
every `python -m MODULE` and every `gryphone COMMAND` (README, BENCHMARKS, docs/, the packages'
READMEs, the weights' cards). Placeholders in capitals (NAME, PATH) are not names."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from train.cli import COMMANDS
from train.config import PRESETS

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("tokenizer", "datasets_prep", "model", "train", "benchmarks", "tests", "fixtures", "docs", ".ci")
PATH = re.compile(r"^(?:\./)?((?:%s)/[\w./-]*\w/?)$" % "|".join(re.escape(r) for r in ROOTS))
SPAN = re.compile(r"`([^`\n]+)`")


def documents() -> list[Path]:
    docs = [REPO / "README.md", REPO / "BENCHMARKS.md", *sorted((REPO / "docs").glob("*.md")),
            *sorted(REPO.glob("*/README.md")), *sorted((REPO / "model" / "weights").glob("*.md"))]
    return [d for d in docs if d.is_file()]


def placeholder(token: str) -> bool:
    return any(c in token for c in "*<>{}$") or "..." in token or any(
        part.split(".")[0].isupper() for part in token.split("/"))


def named(span: str) -> list[tuple[str, str]]:
    """(what, name) pairs one code span names."""
    out = []
    for token in span.split():
        token = token.strip("(),;:'\"")
        m = PATH.match(token)
        if m and not placeholder(token):
            out.append(("path", m.group(1)))
    out += [("preset", n) for n in re.findall(r"--config[ =]([\w-]+)", span) if not n.isupper()]
    out += [("module", m) for m in re.findall(r"python3? -m ([\w.]+)", span)]
    out += [("command", c) for c in re.findall(r"(?:^|\s)gryphone ([a-z][\w-]*)", span)]
    return out


def exists(what: str, name: str) -> bool:
    if what == "path":
        return (REPO / name).exists()
    if what == "preset":
        return name in PRESETS
    if what == "module":
        return importlib.util.find_spec(name) is not None
    return name in COMMANDS


@pytest.mark.parametrize("doc", documents(), ids=lambda p: str(p.relative_to(REPO)))
def test_what_a_document_names_exists(doc: Path):
    missing = sorted({(what, name) for span in SPAN.findall(doc.read_text(encoding="utf-8"))
                      for what, name in named(span) if not exists(what, name)})
    assert not missing, f"{doc.relative_to(REPO)} names what does not exist: {missing}"


def test_the_scan_sees_each_kind_of_name():
    assert named("python -m train.run --config crohme-cpu model/search.py") == [
        ("path", "model/search.py"), ("preset", "crohme-cpu"), ("module", "train.run")]
    assert named("gryphone recognize formula.png") == [("command", "recognize")]
    assert named("model/NAME.py --config PRESET") == []
    assert not exists("path", "model/nope.py") and not exists("preset", "nope") and not exists("command", "nope")
