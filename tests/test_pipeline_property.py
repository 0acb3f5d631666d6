"""The whole pipeline on labels known by construction (hypothesis):

random label -> synthesized ink -> InkML file -> raster (datasets_prep.render.render_ink) -> shard
(datasets_prep.inkml.convert on a tmp dir) -> tokenizer ids (tokenizer.SATVocab) -> LaTeX == label.
"""
from __future__ import annotations

import io
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from datasets_prep.synth import generate, random_label, synthesize
from datasets_prep.synth.batch import sample_id

import datasets_prep.inkml as inkml  # noqa: E402  (imported, never skipped: a broken import must fail)
import datasets_prep.render as render  # noqa: E402
import datasets_prep.shards as shards  # noqa: E402
import tokenizer  # noqa: E402
from PIL import Image  # noqa: E402


def _decode(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("L"))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), fmt=st.sampled_from(["mathwriting", "crohme"]),
       depth=st.integers(0, 3), length=st.integers(1, 14))
def test_label_survives_synth_render_shard_and_ids(seed, fmt, depth, length):
    rng = np.random.default_rng(seed)
    labels = [random_label(rng, depth=depth, length=length) for _ in range(3)]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        summary = generate(0, tmp / "src", labels=labels, seed=seed, fmt=fmt)
        assert summary["written"] == 3 and not summary["skipped"]
        inputs = [tmp / "src"] if fmt == "mathwriting" else [tmp / "src" / "train"]
        out = inkml.convert(fmt, inputs, out=tmp / "shards", workers=1)
        assert out["totals"]["rows"] == 3 and out["totals"]["quarantined"] == 0
        table = shards.load_split(tmp / "shards" / "train")
        assert table.num_rows == 3
        rows = table.to_pylist()
    expected = {tokenizer.detokenize(tokenizer.tokenize(lab)) for lab in labels}
    got = {tokenizer.detokenize(tokenizer.tokenize(r["latex"])) for r in rows}
    assert got == expected
    assert all(r["label_error"] is None for r in rows)

    vocab = tokenizer.SATVocab.build(labels)
    for r in rows:
        enc = vocab.encode(r["latex"])
        assert not enc.oov_symbols and not enc.oov_modifiers
        decoded = vocab.decode(enc.symbols, enc.modifiers)
        assert tokenizer.tokenize(decoded) == tokenizer.tokenize(r["latex"])
        img = _decode(r["image"]["bytes"])
        assert img.shape == (224, 224) and img.min() < 128 and (img < 128).mean() < 0.5  # ink on a background

    if fmt == "mathwriting":  # the file keeps the synthesized ink exactly, so the raster is the same
        by_id = {r["sample_id"]: r for r in rows}
        for i, lab in enumerate(labels):
            ink = synthesize(lab, np.random.default_rng([seed, 0, i, 0]))
            row = by_id[sample_id(seed, "train", fmt, i)]
            assert row["latex"] == ink.annotations["normalizedLabel"]
            assert np.array_equal(_decode(row["image"]["bytes"]), render.render_ink(ink))
