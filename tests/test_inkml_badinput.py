"""The bad-input corpus: each broken file ends in quarantine.jsonl with a clear reason, never a crash,
and every good file beside it still becomes a row."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from datasets_prep.inkml import convert
from datasets_prep.readers import InkError, read_inkml
from datasets_prep.sources import target_label
from datasets_prep.shards import load_split
from test_inkml_readers import NS, crohme_file

GOOD = crohme_file(["10 10, 20 25, 30 10", "15 15"], truth="$x+1$")
BILLION_LAUGHS = (b'<?xml version="1.0"?>\n<!DOCTYPE ink [\n <!ENTITY lol "lol">\n'
                  + b"".join(b' <!ENTITY lol%d "%s">\n' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
                             for i in range(1, 10))
                  + b"]>\n" + GOOD.replace(b"$x+1$", b"&lol9;"))
EXTERNAL_ENTITY = (b'<?xml version="1.0"?>\n<!DOCTYPE ink [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n'
                   + GOOD.replace(b"$x+1$", b"&xxe;"))
EXTERNAL_DTD = (b'<?xml version="1.0"?>\n<!DOCTYPE ink SYSTEM "http://example.com/evil.dtd">\n' + GOOD)


def million_point_trace() -> bytes:
    pts = ", ".join(["123.45 678.90"] * 1_000_000)
    return crohme_file([pts])


# name -> (bytes, expected stage, expected kind or None, substring of the message)
BAD = {
    "truncated.inkml": (GOOD[: len(GOOD) * 2 // 3], "parse", None, "line"),
    "empty.inkml": (b"", "read", "empty-file", "0 bytes"),
    "garbage.inkml": (np.random.default_rng(0).bytes(3000), "parse", None, ""),
    "billion_laughs.inkml": (BILLION_LAUGHS, "parse", "dtd", "DTD"),
    "external_entity.inkml": (EXTERNAL_ENTITY, "parse", "dtd", "DTD"),
    "external_dtd.inkml": (EXTERNAL_DTD, "parse", "dtd", "DTD"),
    "no_traces.inkml": (crohme_file([]), "traces", "no-traces", "no <trace>"),
    "blank_traces.inkml": (crohme_file(["", "  "]), "traces", "no-traces", "no <trace>"),
    "nan.inkml": (crohme_file(["1 2, nan 4"]), "traces", "non-finite", "NaN"),
    "inf.inkml": (crohme_file(["1 2, 3 inf"]), "traces", "non-finite", "NaN or inf"),
    "one_point.inkml": (crohme_file(["5 5"]), "traces", "too-few-points", "1 point"),
    "million_points.inkml": (million_point_trace(), None, None, "limit"),  # libxml2's text-node cap
    "too_many_points.inkml": (crohme_file([", ".join(["1 2"] * 300_000)]), "traces", "too-many-points", "limit"),
    "wrong_namespace.inkml": (GOOD.replace(NS.encode(), b'xmlns="http://example.com/not-inkml"'), "parse",
                              "wrong-root", "not InkML"),
    "not_ink_root.inkml": (b"<svg><path d='M0 0'/></svg>", "parse", "wrong-root", "not InkML"),
    "no_label.inkml": (crohme_file(["1 2, 3 4"], truth=None), "label", "no-label", "no truth"),
    "bad_number.inkml": (crohme_file(["1 2, 3 abc"]), "traces", "bad-number", "abc"),
    "one_value_points.inkml": (crohme_file(["1, 2, 3"]), "traces", "bad-number", "X and Y"),
    "undefined_entity.inkml": (GOOD.replace(b"$x+1$", b"&nope;"), "parse", None, "nope"),
    "text_in_root.inkml": (b"plain text, not xml at all", "parse", None, ""),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_reader_rejects_with_a_clear_reason(name):
    data, stage, kind, needle = BAD[name]
    with pytest.raises(InkError) as e:
        target_label(read_inkml(data, f"bad/{name}"), "crohme", f"bad/{name}")
    err = e.value
    assert str(err).startswith(f"bad/{name}: {err.stage}: ")
    if stage:
        assert err.stage == stage, str(err)
    if kind:
        assert err.kind == kind, str(err)
    assert needle in err.message, str(err)
    assert "\n" not in str(err)


def test_billion_laughs_is_refused_fast_and_small():
    import time

    t = time.process_time()
    with pytest.raises(InkError):
        read_inkml(BILLION_LAUGHS, "bl.inkml")
    assert time.process_time() - t < 5  # generous: expansion would take minutes and gigabytes


def test_external_entity_is_never_resolved(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    data = EXTERNAL_ENTITY.replace(b"file:///etc/passwd", secret.as_uri().encode())
    with pytest.raises(InkError) as e:
        read_inkml(data, "xxe.inkml")
    assert "TOP-SECRET" not in str(e.value)


def test_converter_quarantines_each_bad_file_and_keeps_all_good_ones(tmp_path):
    root = tmp_path / "mixed"
    root.mkdir()
    for name, (data, *_rest) in BAD.items():
        (root / name).write_bytes(data)
    for i in range(7):
        (root / f"good{i}.inkml").write_bytes(GOOD.replace(b"$x+1$", f"$x+{i}$".encode()))
    (root / "notes.txt").write_text("not InkML: ignored")
    s = convert("crohme", [root], tmp_path / "out", workers=2, shard_size=4)
    q = [json.loads(line) for line in (tmp_path / "out/quarantine.jsonl").read_text().splitlines()]
    assert sorted(Path(r["path"]).name for r in q) == sorted(BAD)
    for r in q:
        name = Path(r["path"]).name
        assert set(r) == {"path", "stage", "kind", "error"} and r["error"]
        stage = BAD[name][1]
        assert stage is None or r["stage"] == stage, r
        assert r["stage"] != "internal", r  # a crash inside the pipeline, not a reported reason
    t = load_split(tmp_path / "out/mixed")
    assert sorted(t.column("latex").to_pylist()) == sorted(f"x+{i}" for i in range(7))
    assert s["splits"]["mixed"]["inputs"] == len(BAD) + 7
    assert s["splits"]["mixed"]["quarantined"] == len(BAD)
    assert sum(s["errors"].values()) == len(BAD)
