"""CROHME 2023: SymLG label graphs -> LaTeX (against an independent generator), and the TC11 layout
converted with inks, image-only samples and the SymLG/truth check."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from datasets_prep.images import convert
from datasets_prep.shards import load_split
from datasets_prep.symlg import SymLGError, to_latex
from tokenizer import normalize

SYMBOLS = ["x", "y", "2", "3", "a", "+", "=", "\\alpha", "\\pi", "(", ")"]


# An expression is a list of atoms; an atom is (kind, label, parts...) drawn by hypothesis.
def atoms(children):
    sym = st.sampled_from(SYMBOLS)
    plain = st.tuples(st.just("sym"), sym, st.none() | children, st.none() | children)
    frac = st.tuples(st.just("frac"), children, children)
    root = st.tuples(st.just("sqrt"), children)
    big = st.tuples(st.just("sum"), st.none() | children, st.none() | children)
    return st.lists(plain | frac | root | big, min_size=1, max_size=3)


EXPR = st.recursive(st.lists(st.tuples(st.just("sym"), st.sampled_from(SYMBOLS), st.none(), st.none()),
                             min_size=1, max_size=3), atoms, max_leaves=12)


class _Writer:
    """Writes one expression as LaTeX and as a SymLG file, independently of the reader."""

    def __init__(self):
        self.objects, self.relations, self.n = [], [], 0

    def obj(self, label: str, path: str) -> str:
        self.n += 1
        oid = f"{label}_{self.n}"
        self.objects.append(f"O, {oid}, {label}, 1.0, {path}")
        return oid

    def row(self, atoms_, path: str) -> tuple[str, str]:
        """(LaTeX, id of the first object) of a row; objects chained by Right."""
        tex, first, prev = [], None, None
        for i, a in enumerate(atoms_):
            p = path + "R" * i
            t, oid = self.atom(a, p)
            tex.append(t)
            if prev is not None:
                self.relations.append(f"R, {prev}, {oid}, Right, 1.0")
            first = first or oid
            prev = oid
        return " ".join(tex), first

    def child(self, parent: str, rel: str, sub, path: str) -> str:
        t, oid = self.row(sub, path)
        self.relations.append(f"R, {parent}, {oid}, {rel}, 1.0")
        return t

    def atom(self, a, path: str) -> tuple[str, str]:
        kind = a[0]
        if kind == "sym":
            oid = self.obj(a[1], path)
            t = a[1]
            if a[2]:
                t += " _ { " + self.child(oid, "Sub", a[2], path + "Sub") + " }"
            if a[3]:
                t += " ^ { " + self.child(oid, "Sup", a[3], path + "Sup") + " }"
            return t, oid
        if kind == "frac":
            oid = self.obj("-", path)
            return ("\\frac { " + self.child(oid, "Above", a[1], path + "Above") + " } { "
                    + self.child(oid, "Below", a[2], path + "Below") + " }"), oid
        if kind == "sqrt":
            oid = self.obj("\\sqrt", path)
            return "\\sqrt { " + self.child(oid, "Inside", a[1], path + "Inside") + " }", oid
        oid = self.obj("\\sum", path)
        t = "\\sum"
        if a[1]:
            t += " _ { " + self.child(oid, "Below", a[1], path + "Below") + " }"
        if a[2]:
            t += " ^ { " + self.child(oid, "Above", a[2], path + "Above") + " }"
        return t, oid

    def text(self) -> str:
        return ("# IUD, sample\n# Objects(%d):\n" % len(self.objects) + "\n".join(self.objects)
                + "\n\n# Relations from SRT:\n" + "\n".join(self.relations) + "\n")


@settings(max_examples=150, deadline=None)
@given(EXPR)
def test_symlg_reads_back_what_an_independent_writer_wrote(expr):
    w = _Writer()
    latex, _ = w.row(expr, "O")
    assert normalize(to_latex(w.text(), "t.lg")) == normalize(latex)


def test_the_published_example_and_word_labels():
    ex = ("# IUD, filename\nO, z_1, z, 1.0, OSub\nO, F_1, F, 1.0, O\nO, x_1, x, 1.0, ORight\n\n"
          "R, F_1, z_1, Sub, 1.0\nR, F_1, x_1, Right, 1.0\n")
    assert to_latex(ex) == "F _ { z } x"
    assert to_latex("O, a, a, 1.0\nO, c, COMMA, 1.0\nO, b, 12, 1.0\nEO, a, c, R, 1.0\nEO, c, b, R, 1.0\n") == "a , 1 2"


@pytest.mark.parametrize("text,why", [
    ("", "no objects"),
    ("O, a, a, 1.0\nO, b, b, 1.0\n", "2 roots"),
    ("O, a, a, 1.0\nO, b, b, 1.0\nR, a, b, Right, 1.0\nR, b, a, Right, 1.0\n", "roots"),
    ("O, a, a, 1.0\nO, b, b, 1.0\nR, a, b, Diagonal, 1.0\n", "unknown relation"),
    ("O, a, a, 1.0\nR, a, z, Right, 1.0\n", "unknown objects"),
    ("O, a, a, 1.0\nO, a, b, 1.0\n", "defined twice"),
])
def test_graphs_that_are_not_layout_trees_are_refused_with_the_reason(text, why):
    with pytest.raises(SymLGError, match=why):
        to_latex(text, "bad.lg")


INK = """<ink xmlns="http://www.w3.org/2003/InkML"><annotation type="truth">$x^{2}$</annotation>
<trace>0 0, 10 10, 20 0</trace><trace>25 -10, 30 -15, 35 -10</trace></ink>"""


def _png(seed: int) -> bytes:
    a = np.full((60, 160), 255, np.uint8)
    a[20 + seed: 26 + seed, 10:150] = 0
    a[10:50, 70:76] = 0
    buf = io.BytesIO()
    Image.fromarray(a).save(buf, format="PNG")
    return buf.getvalue()


def test_tc11_layout_inks_image_only_samples_and_the_truth_check(tmp_path):
    root = tmp_path / "TC11_CROHME23"
    for d in ("INKML/train/CROHME2023_train", "IMG/train/CROHME2023_train", "SymLG/train/CROHME2023_train",
              "IMG/test/CROHME2023_test", "SymLG/test/CROHME2023_test"):
        (root / d).mkdir(parents=True)
    sup = "O, x_1, x, 1.0, O\nO, 2_1, 2, 1.0, OSup\nR, x_1, 2_1, Sup, 1.0\n"
    (root / "INKML/train/CROHME2023_train/a.inkml").write_text(INK)
    (root / "SymLG/train/CROHME2023_train/a.lg").write_text(sup)
    (root / "IMG/train/CROHME2023_train/a.png").write_bytes(_png(0))           # same sample as the ink
    (root / "INKML/train/CROHME2023_train/b.inkml").write_text(INK)
    (root / "SymLG/train/CROHME2023_train/b.lg").write_text(sup.replace(", 2,", ", 3,"))  # disagrees
    (root / "IMG/test/CROHME2023_test/c.png").write_bytes(_png(1))             # image-only
    (root / "SymLG/test/CROHME2023_test/c.lg").write_text("O, a, a, 1.0\nO, b, b, 1.0\nR, a, b, Right, 1.0\n")
    (root / "IMG/test/CROHME2023_test/d.png").write_bytes(_png(2))             # nothing labels it
    (root / "IMG/test/CROHME2023_test/e.png").write_bytes(_png(3))
    (root / "SymLG/test/CROHME2023_test/e.lg").write_text("O, a, a, 1.0\nO, b, b, 1.0\n")  # two roots
    (root / "SymLG/test/CROHME2023_test/f.lg").write_text(sup)                  # a graph with nothing to draw
    s = convert("crohme2023", [root], tmp_path / "o", size=(64, 192), workers=1)
    assert s["split_names"] == ["train", "test"]
    train = load_split(tmp_path / "o" / "train")
    assert train.column("sample_id").to_pylist() == ["CROHME2023_train/a", "CROHME2023_train/b"]
    ann = [json.loads(a) for a in train.column("annotations").to_pylist()]
    assert [a["symlg_agrees"] for a in ann] == ["true", "false"] and ann[1]["symlg_latex"] == "x ^ { 3 }"
    test = load_split(tmp_path / "o" / "test")
    assert test.column("latex").to_pylist() == ["a b"] and test.column("num_strokes").to_pylist() == [None]
    kinds = sorted(json.loads(l)["kind"] for l in (tmp_path / "o" / "quarantine.jsonl").read_text().splitlines())
    assert kinds == ["bad-symlg", "missing-image", "no-label"]
