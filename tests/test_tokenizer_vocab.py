"""SATVocab / TokenVocab: build, encode to fixed-length ids, decode, persist, report OOV."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tokenizer import LatexError, SATVocab, TokenVocab, tokenize
from tokenizer.vocab import EMPTY_MODIFIER, PLACEHOLDER

LABELS = [r"\frac{a}{b}", "x^{2}+y^{2}", r"\sqrt[3]{x}", "x_{i}^{2}", r"\left( a \right)", "{}^{14}C", "a+b=c"]


def test_specials_and_build():
    v = SATVocab.build(LABELS + ["x\\", "{}"])
    assert (v.PAD, v.MASK, v.UNK) == (0, 1, 2)
    assert v.symbols[:3] == ["<pad>", "<mask>", "<unk>"]
    assert v.modifiers[3] == EMPTY_MODIFIER
    assert v.build_skipped == 2
    assert v.num_symbols == len(v.symbols) and v.num_modifiers == len(v.modifiers)
    assert "x" in v.symbols and (("^", "{"), ("}",)) in v.modifiers


def test_encode_decode_round_trip():
    v = SATVocab.build(LABELS)
    for label in LABELS:
        e = v.encode(label, max_len=20)
        assert e.symbols.dtype == np.int64 and e.symbols.shape == (20,) and e.modifiers.shape == (20,)
        assert e.length == len([t for t in tokenize(label) if t not in "^_{}"])
        assert (e.symbols[e.length:] == v.PAD).all() and (e.modifiers[e.length:] == v.PAD).all()
        assert not e.oov_symbols and not e.oov_modifiers
        assert tokenize(v.decode(e.symbols, e.modifiers)) == tokenize(label)
        assert v.decode(e.symbols.tolist(), e.modifiers.tolist()) == v.decode(e.symbols, e.modifiers)


def test_oov_is_reported_not_silent():
    v = SATVocab.build(["x^{2}"])
    e = v.encode(r"\alpha_{3}", max_len=5)
    assert e.oov_symbols == [r"\alpha", "3"]
    assert e.oov_modifiers == [(("_", "{"), ("}",))]
    assert e.symbols[0] == v.UNK and e.modifiers[1] == v.UNK
    assert v.decode(e.symbols, e.modifiers) == PLACEHOLDER + PLACEHOLDER
    assert v.oov(r"\alpha_{3}") == ([r"\alpha", "3"], [(("_", "{"), ("}",))])


def test_min_count_sends_rare_items_to_unk():
    v = SATVocab.build(["x", "x", "y"], min_count=2)
    assert "x" in v.symbols and "y" not in v.symbols


def test_too_long_and_unencodable():
    v = SATVocab.build(LABELS)
    with pytest.raises(LatexError) as exc:
        v.encode("a+b=c", max_len=4)
    assert exc.value.kind == "too-long"
    v.encode("a+b=c", max_len=5)
    for bad, kind in [("{}", "no-visible-symbol"), ("x\\", "trailing-backslash")]:
        with pytest.raises(LatexError) as exc:
            v.encode(bad)
        assert exc.value.kind == kind


def test_decode_any_model_output():
    v = SATVocab.build(LABELS)
    x = v.symbols.index("x")
    sup = v.modifiers.index((("^", "{"), ("}",)))
    assert v.decode([x, v.MASK, v.PAD, x], [3, sup, 3, 3]) == "x^{" + PLACEHOLDER + "}"
    assert v.decode([x, 10_000, x], [v.MASK, -5, 99_999]) == "x" + PLACEHOLDER + " x"
    assert v.decode([], []) == ""
    assert v.decode([v.PAD, x], [3, 3]) == ""


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=20), st.lists(st.integers(-3, 40), max_size=20))
def test_decode_never_raises(sym_ids, mod_ids):
    v = SATVocab.build(LABELS)
    assert isinstance(v.decode(sym_ids, mod_ids), str)


def test_save_load_and_dict(tmp_path):
    v = SATVocab.build(LABELS, extended=True)
    path = tmp_path / "vocab.json"
    v.save(path)
    w = SATVocab.load(path)
    assert (w.symbols, w.modifiers, w.extended) == (v.symbols, v.modifiers, True)
    assert SATVocab.from_dict(json.loads(json.dumps(v.to_dict()))).modifiers == v.modifiers
    e1, e2 = v.encode(r"\sqrt[3]{x}"), w.encode(r"\sqrt[3]{x}")
    assert (e1.symbols == e2.symbols).all() and (e1.modifiers == e2.modifiers).all()


@pytest.mark.parametrize("content", ["", "{not json", "[]", '{"format": "other"}',
                                     '{"format": "gryphone.sat-vocab", "version": 1, "symbols": ["a"], '
                                     '"modifiers": []}',
                                     '{"format": "gryphone.sat-vocab", "version": 99}'])
def test_corrupt_vocab_file_names_the_file(tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match="bad.json"):
        SATVocab.load(path)
    with pytest.raises(ValueError, match="missing.json"):
        SATVocab.load(tmp_path / "missing.json")


def test_token_vocab():
    v = TokenVocab.build(LABELS + ["x\\"])
    assert (v.PAD, v.BOS, v.EOS, v.UNK) == (0, 1, 2, 3) and v.build_skipped == 1
    ids = v.encode("x^{2}", max_len=10)
    assert ids.dtype == np.int64 and ids.shape == (10,)
    assert ids[0] == v.BOS and ids[6] == v.EOS and (ids[7:] == v.PAD).all()
    assert v.decode(ids) == "x^{2}"
    assert v.decode([v.BOS, v.tokens.index("x"), v.UNK, v.EOS, v.tokens.index("x")]) == "x" + PLACEHOLDER
    with pytest.raises(LatexError) as exc:
        v.encode("x^{2}", max_len=6)
    assert exc.value.kind == "too-long"
    assert v.oov(r"x+\omega") == [r"\omega"]


def test_token_vocab_persistence(tmp_path):
    v = TokenVocab.build(LABELS)
    v.save(tmp_path / "t.json")
    assert TokenVocab.load(tmp_path / "t.json").tokens == v.tokens
    (tmp_path / "bad.json").write_text('{"format": "gryphone.token-vocab", "version": 1, "tokens": ["x"]}')
    with pytest.raises(ValueError, match="bad.json"):
        TokenVocab.load(tmp_path / "bad.json")
