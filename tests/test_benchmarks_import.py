"""The benchmark scripts that reach into model/ and train/ keep up with them: each imports, and
gpu_bench's --smoke runs every part on CPU (training steps of GryphOne, PosFormer and HVT, batch-1
decoding, a short real run on micro shards); bench_decode and tf_loss then read that run's checkpoint."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from datasets_prep.inkml import convert
from datasets_prep.synth import generate
from model import load

from builders import needs_tex

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"
SCRIPTS = tuple(sorted(p.stem for p in BENCHMARKS.glob("*.py")))


def load_script(name: str):
    """benchmarks/NAME.py as module NAME (registered first: dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def named_report(tmp_path: Path, report: dict) -> str:
    """`report` written as a train.eval --json file, as the report-reading scripts take it: one=PATH."""
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    return f"one={path}"


@pytest.fixture(scope="module", autouse=True)
def keep_threads():
    """The scripts set torch's thread count (one thread for tiny shapes); put it back afterwards."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def micro_shards(tmp_path_factory) -> Path:
    """Four synthetic inks as 64x64 shards (split train)."""
    root = tmp_path_factory.mktemp("bench-micro")
    labels = ["x^{2}+1", "\\frac{a}{b}", "\\sqrt{y}-3", "z_{i}=0"]
    generate(0, root / "ink", labels=labels, seed=3, fmt="mathwriting", split="train")
    convert("mathwriting", inputs=[root / "ink"], out=root / "shards", size=(64, 64), workers=1, progress=False)
    return root / "shards"


@pytest.fixture(scope="module")
def smoke(micro_shards, tmp_path_factory) -> tuple[dict, Path]:
    """gpu_bench --smoke with its real run on the micro shards: (report, run folder)."""
    out = tmp_path_factory.mktemp("gpu-bench")
    gpu_bench = load_script("gpu_bench")
    rc = gpu_bench.main(["--smoke", "--data", str(micro_shards), "--run-dir", str(out / "run"),
                         "--json", str(out / "gpu_bench.json")])
    assert rc == 0
    return json.loads((out / "gpu_bench.json").read_text()), out / "run"


def test_every_script_is_checked():
    assert {"gpu_bench", "bench_onnx", "print_fonts", "bench_compile"} <= set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_imports_and_explains_itself(name, monkeypatch, capsys):
    """Each script imports and its --help prints usage and exits 0 (argparse built before any work)."""
    main = load_script(name).main
    monkeypatch.setattr(sys, "argv", [f"{name}.py", "--help"])
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_gpu_bench_smoke_measures_every_part(smoke):
    report, run = smoke
    assert report["device"] == "cpu" and "train_compiled" not in report  # --smoke: CPU, eager only
    assert report["train_eager"]["kind"] == "diffusion" and report["train_eager"]["images_per_s"] > 0
    others = report["train_eager_others"]
    assert {name: r["kind"] for name, r in others.items()} == {"posformer-paper": "posformer", "hvt-paper": "hvt"}
    assert others["posformer-paper"]["optimizer"] == "sgd" and all(r["images_per_s"] > 0 for r in others.values())
    assert set(report["fps_batch1"]) == {"encoder", "remask_T1", "remask_T2", "ar_greedy_4tok"}
    real = report["real_run"]
    assert real["rc"] == 0, real["log_tail"]
    assert [step for step, _, _ in real["curve"]] == [2, 4] and (run / "ckpt.pt").is_file()


def test_bench_decode_reads_the_checkpoint(smoke, micro_shards, tmp_path):
    bench_decode = load_script("bench_decode")
    table = tmp_path / "decode.json"
    assert bench_decode.main(["--ckpt", str(smoke[1] / "ckpt.pt"), "--data", str(micro_shards), "--split", "train",
                              "--images", "2", "--warmup", "1", "--Ts", "1,2", "--ar-tokens", "3",
                              "--json", str(table)]) == 0
    names = set(json.loads(table.read_text()))
    assert {"encoder only", "diffusion remask T=2", "diffusion mask-predict T=1", "AR greedy (3 tokens)"} <= names


def test_bench_decode_ar_to_its_own_eos(smoke):
    bench_decode = load_script("bench_decode")
    diff = load(smoke[1] / "ckpt.pt").recognizer
    ar = bench_decode.ar_beside(diff, 3)
    fns = bench_decode.decoders(diff, ar, [1], None)
    ids = fns["AR greedy (own EOS)"](torch.rand(1, 1, *diff.render.size))
    assert ids.shape[0] == 1 and int(ids[0, 0]) == ar.labels.vocab.BOS


def test_tf_loss_reads_the_checkpoint(smoke, micro_shards, capsys):
    tf_loss = load_script("tf_loss")
    assert tf_loss.main(["--ckpt", str(smoke[1] / "ckpt.pt"), "--data", str(micro_shards), "--splits", "train",
                         "--limit", "4"]) == 0
    line = capsys.readouterr().out.strip()
    assert "step 4 train: CE" in line and line.endswith("over 4")


def test_pick_decoder_prefers_the_deterministic_and_the_shorter_within_half_a_point():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("pick_decoder", Path(__file__).resolve().parents[1]
                                                  / "benchmarks" / "pick_decoder.py")
    pick = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pick)
    m = lambda em: {"em": em}  # noqa: E731
    assert pick.pick({"remask-T10": m(0.300), "mask-predict-T10": m(0.297), "mask-predict-T1": m(0.20)}) \
        == ("mask-predict", 10)
    assert pick.pick({"remask-T10": m(0.31), "mask-predict-T10": m(0.30)}) == ("remask", 10)
    assert pick.pick({"mask-predict-T20": m(0.301), "mask-predict-T10": m(0.300)}) == ("mask-predict", 10)
    assert pick.pick({"greedy": m(0.34), "beam5": m(0.36)}) == ("beam", 5)
    assert pick.pick({"ar-greedy": m(0.34), "ar-beam5": m(0.36)}) == ("beam", 5)  # reports written before the rename
    assert pick.pick({"greedy": m(0.36), "beam5": m(0.36)}) == ("greedy", 1)


def test_the_device_check_runs_every_part_on_cpu(micro_shards, tmp_path):
    """gpu_check --smoke, narrowed to GryphOne at batch 2 and T=1: training eager and compiled, decoding
    eager and compiled (outputs equal), the AR greedy line and the loader table on the micro shards."""
    gpu_check = load_script("gpu_check")
    out = tmp_path / "gpu_check.json"
    assert gpu_check.main(["--smoke", "--presets", "paper", "--batches", "2", "--fps-batches", "1", "--Ts", "1",
                           "--data", str(micro_shards), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert [(r["batch"], r["compile"]) for r in report["train"]] == [(2, False), (2, True)]
    assert all("images_per_s" in r for r in report["train"]), report["train"]
    fps = {r["decoder"]: r for r in report["fps"]}
    assert fps["mask-predict-T1"]["outputs_equal"] and fps["remask-T1"]["outputs_equal"], fps
    assert fps["greedy-4tok"]["eager_fps"] > 0 and fps["greedy-4tok"]["outputs_equal"], fps
    assert report["loader"][0]["workers"] == 0 and report["loader"][0]["images_per_s"] > 0


def test_bench_width_times_named_variants(capsys):
    """--variant sets replace the width table: the first is the base (1.00x), every name is a row, and
    a variant without NAME= is refused with usage (exit 2), not a traceback."""
    bench_width = load_script("bench_width")
    assert bench_width.main(["--smoke", "--variant", "base=", "--variant", "no dropout=model.dropout=0"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")][2:]
    assert [r.split(" | ")[0].strip("| ") for r in rows] == ["base", "no dropout"]
    assert rows[0].rstrip(" |").endswith("1.00x")
    with pytest.raises(SystemExit) as stop:
        bench_width.main(["--smoke", "--variant", "bad"])
    assert stop.value.code == 2
    capsys.readouterr()
    # another recognizer: the smoke sizes it has no key for are left out, not refused
    assert bench_width.main(["--smoke", "--kind", "hvt", "--variant", "attention 8=model.attn_dim=8"]) == 0
    assert "| attention 8 |" in capsys.readouterr().out


def test_bench_coverage_times_both_forms_alike(tmp_path, capsys):
    """Both forms of HVT's coverage term take the same step: equal losses, one row per form and mode."""
    mod = load_script("bench_coverage")
    assert mod.main(["--smoke", "--eager-only", "--json", str(tmp_path / "c.json")]) == 0
    report = json.loads((tmp_path / "c.json").read_text())
    assert report["step"]["loss_rel_diff"] < 1e-5
    assert [t["preset"] for t in report["term"]] == ["print-cpu", "hvt-paper"]
    assert all(t["max_abs_diff"] < 1e-4 for t in report["term"])
    assert set(report["step"]["ms_per_step"]) == {"conv then projection, eager", "composed, eager"}
    assert "| composed, eager |" in capsys.readouterr().out


def test_exact_by_length_buckets_and_scores(tmp_path, capsys):
    mod = load_script("exact_by_length")
    preds = [{"sample_id": "a", "decoder": "greedy", "seed": 0, "ref": "x + 1", "hyp": "x + 1"},
             {"sample_id": "b", "decoder": "greedy", "seed": 0, "ref": " ".join(["y"] * 25), "hyp": " ".join(["y"] * 24)},
             {"sample_id": "c", "decoder": "greedy", "seed": 0, "ref": "\\frac { a } { b }", "hyp": "\\frac{a}{b}"},
             {"sample_id": "d", "decoder": "greedy", "seed": 0, "ref": "\\mathrm { d x }", "hyp": "\\mathrm{dx}"},
             {"sample_id": "a", "decoder": "beam5", "seed": 0, "ref": "x + 1", "hyp": "x"}]
    report = {"results": {"test": {"predictions": preds}}}
    table = mod.by_length(report, "test", "greedy")
    # predictions as train.eval writes them (LaTeX as written) are spaced into tokens first, as it scores them
    assert table["0-19"] == (3, 100.0, 100.0) and table["20-39"] == (1, 0.0, 0.0)
    assert table["all"][0] == 4
    named = named_report(tmp_path, report)
    assert mod.main([named, "--decoder", "beam5"]) == 0
    assert "| 0-19 | 1 | 0.0 / 0.0 |" in capsys.readouterr().out
    assert mod.main([named, "--decoder", "beam9"]) == 2


@needs_tex
def test_tex_image_match_counts_pictures_not_spellings(tmp_path, capsys):
    """Spellings TeX draws alike match; a different picture, or a prediction TeX refuses, is a miss; a
    reference TeX refuses is left out and counted."""
    mod = load_script("tex_image_match")
    pairs = [("x ^ { 2 }", "x ^ 2"),                       # same picture, other tokens: a match
             ("E = m c ^ { 2 } \\, .", "E = m c ^ { 2 } ."),  # a thin space: blank columns aside, a match
             ("a + b", "a + b"),                           # same tokens
             ("x ^ { 2 }", "x _ { 2 }"),                   # another picture
             ("\\frac { a } { b }", "\\frac { a } {"),     # TeX refuses the prediction: a miss
             ("\\undefinedcommand x", "x"),                # TeX refuses the reference: left out
             # a thin space moves what follows by a fraction of a pixel: one picture to the eye, not in pixels;
             # counted as a miss, and among the misses spelled alike
             ("\\int _ { - \\infty } ^ { \\infty } e ^ { - x ^ { 2 } } \\, d x = \\sqrt { \\pi }",
              "\\int _ { - \\infty } ^ { \\infty } e ^ { - x ^ { 2 } } d x = \\sqrt { \\pi }")]
    t = mod.tex_image_table(pairs)
    assert (t["samples"], t["scored"], t["ref_undrawable"], t["hyp_undrawable"]) == (7, 6, 1, 1), t
    assert t["image_exact_match"] == pytest.approx(50.0) and t["text_exact_match"] == pytest.approx(100 / 7)
    assert t["canonical_pixels_differ"] == 1
    report = {"results": {"test": {"predictions": [
        {"sample_id": str(i), "decoder": "beam5", "seed": 0, "ref": r, "hyp": h} for i, (r, h) in enumerate(pairs)]}}}
    named = named_report(tmp_path, report)
    assert mod.main([named, "--decoder", "beam5"]) == 0
    assert "| one | 7 | 14.29 | 50.00 | 6 | 1 | 1 | 1 |" in capsys.readouterr().out
    assert mod.main([named, "--decoder", "beam9"]) == 2


@needs_tex
def test_font_gallery_draws_what_the_shipped_reader_returns(tmp_path, capsys):
    """Each reading is the reader's own: the picture's 'same' is the canonical spelling or the picture
    typeset back; an unknown font is refused with exit 2 before anything is read."""
    from PIL import Image

    mod = load_script("font_gallery")
    assert mod.same_spelling(r"x ^ { 2 } \, d x", r"x^{2}dx") and not mod.same_spelling("x ^ { 2 }", "x _ { 2 }")
    assert mod.main(["--fonts", "cm,comic", "--out", str(tmp_path / "g.png")]) == 2
    assert "unknown TeX font(s) comic" in capsys.readouterr().err
    out = tmp_path / "g.png"
    assert mod.main(["--ckpt", "print-ar", "--fonts", "cm,euler", "--formula", "a + b = c", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert len(printed.splitlines()) == 3 and printed.startswith("cm ") and "wrote" in printed
    assert Image.open(out).size[0] > 200


@needs_tex
def test_degrade_gallery_shows_each_copy_on_the_canvas(tmp_path):
    """Per formula: the stored image, its 4- and 2-level copies (only those grays in them) and the
    degraded draws, each a 64x512 canvas; the picture is written."""
    from PIL import Image

    mod = load_script("degrade_gallery")
    from datasets_prep.synth.print_variation import PrintVariation
    rows = mod.rows_for("a + b = c", 0, PrintVariation(seed=1))
    assert [label for label, _ in rows] == ["stored", "4 levels", "2 levels", "4, degraded 1", "4, degraded 2"]
    assert all(image.shape == (64, 512) and image.dtype == np.uint8 for _, image in rows)
    assert set(np.unique(rows[1][1])) <= {0, 85, 170, 255} and set(np.unique(rows[2][1])) <= {0, 255}
    out = tmp_path / "d.png"
    assert mod.main(["--formula", "a + b = c", "--out", str(out)]) == 0
    assert Image.open(out).size[0] > 512


@pytest.mark.parametrize("bf16", [False, True])
def test_bench_compile_times_bf16_only_when_asked(bf16, monkeypatch):
    """The bf16 copies are timed only when asked (by default: where the CPU has bf16 instructions),
    and the row says which ratios it holds. Compilation is stubbed: the code path, not the speed."""
    bench = load_script("bench_compile")
    monkeypatch.setattr(bench, "compile_for_training", lambda model, mode="default": model)
    label, tcfg = bench.trainers("demo", smoke=True)[1]
    row = bench.train_pair(label, tcfg, bench.canvas("demo", True), batch=2, blocks=1, per_block=1, bf16=bf16)
    assert row["speedup"] > 0 and row["compiled_step_ms"] > 0
    assert ("bf16_speedup" in row) == bf16 and ("compiled_bf16_step_ms" in row) == bf16


def test_edit_classes_files_edits_by_kind(tmp_path, capsys):
    """Each edit of a minimal alignment is filed by kind; a prediction wrong only in braces or spacing is
    counted apart; predictions are spaced as train.eval scores them."""
    mod = load_script("edit_classes")
    assert mod.edits("a b c".split(), "a c".split()) == [("del", "b", "")]
    assert mod.edits("a c".split(), "a b c".split()) == [("ins", "", "b")]
    assert mod.edits("x".split(), "y".split()) == [("sub", "x", "y")]
    assert [mod.kind(t) for t in ("{", "\\,", "^", "\\left(", "\\mathrm", "\\hat", "7", "\\alpha")] == \
        ["braces", "spacing", "scripts", "delimiters", "fonts", "accents", "letters/digits", "other"]
    assert [mod.kind(t) for t in ("\\left", "\\bigl", "\\Bigg", "\\leftarrow", "\\rightarrow", "\\bigcup")] == \
        ["delimiters"] * 3 + ["other"] * 3
    preds = [{"sample_id": "a", "decoder": "greedy", "seed": 0, "ref": "x + 1", "hyp": "x+1"},
             {"sample_id": "b", "decoder": "greedy", "seed": 0, "ref": "{ x } \\, y", "hyp": "xy"},
             {"sample_id": "c", "decoder": "greedy", "seed": 0, "ref": "a ^ { 2 }", "hyp": "b^{3}"}]
    report = {"results": {"test": {"predictions": preds}}}
    t = mod.tally(load_script("exact_by_length").spaced_pairs(report, "test", "greedy"))
    assert t["exact"] == 1 and t["braces_spacing_only"] == 1 and t["edits"] == 5
    assert t["per_kind"] == {"braces": 2, "spacing": 1, "letters/digits": 2}
    named = named_report(tmp_path, report)
    assert mod.main([named]) == 0
    out = capsys.readouterr().out
    assert "| braces | 2 (40.0%) |" in out and "| wrong only in braces / spacing | 1 (33.3%) |" in out
    assert mod.main([named, "--decoder", "beam9"]) == 2


def test_beam_rerank_keeps_every_finished_hypothesis(smoke, micro_shards, capsys):
    """The finished hypotheses come best first, the first being what the recognizer's own beam returns;
    a recognizer without a token beam search is refused with exit 2."""
    from builders import tiny_model
    from model import DecodeSpec
    mod = load_script("beam_rerank")
    torch.manual_seed(0)
    rec = tiny_model("ar", canvas=(32, 128)).eval()
    images = torch.rand(2, 1, 32, 128)
    hyps = mod.finished_hypotheses(rec, images, 3)
    assert [h[0].text for h in hyps] == rec.recognize(images, DecodeSpec("beam", beam=3, valid=False))
    assert all(1 <= len(h) <= 3 and [x.score for x in h] == sorted((x.score for x in h), reverse=True) for h in hyps)
    # each carries its log-probability and length: the score is their ratio (length_penalty 1)
    assert all(abs(x.score - x.logp / x.length) < 1e-6 and x.length >= 1 for h in hyps for x in h)
    assert mod.main(["--ckpt", str(smoke[1] / "ckpt.pt"), "--data", str(micro_shards), "--split", "train"]) == 2
    assert "no token beam search" in capsys.readouterr().err
    assert mod.main(["--ckpt", str(smoke[1] / "ckpt.pt"), "--data", str(micro_shards), "--fonts", "comic"]) == 2
    assert "unknown TeX font 'comic'" in capsys.readouterr().err   # said before any decoding


def test_beam_rerank_counts_what_each_reranker_reaches():
    """Top, oracle, valid-first and render-and-compare picks on hand-made hypotheses and canvases."""
    import numpy as np
    mod = load_script("beam_rerank")
    a = np.zeros((8, 16), np.float32)
    a[2:6, 2:6] = 1
    b = np.zeros((8, 16), np.float32)
    b[2:6, 9:13] = 1
    assert mod.similarity(a, a, "l1") == 0.0 > mod.similarity(a, b, "l1") > mod.similarity(a, None, "l1")
    assert mod.similarity(mod.blur(a, 1), mod.blur(a, 1), "ncc") > mod.similarity(mod.blur(a, 1), mod.blur(b, 1), "ncc")
    assert mod.blur(a, 0) is a
    assert np.allclose(mod.blur(np.ones((8, 16)), 2.0), 1.0)   # a normalized kernel, mirrored edges
    dot = np.zeros((9, 9))
    dot[4, 4] = 1
    spread = mod.blur(dot, 1.0)
    assert np.isclose(spread.sum(), 1.0) and np.allclose(spread, spread.T) and spread[4, 4] == spread.max()
    H = mod.Hyp
    rows = [{"ref": "x + 1", "hyps": [H(-0.1, "x+2", -0.4, 4), H(-0.2, "x+1", -0.8, 4)], "image": a, "canvases": [[b], [a]]},
            {"ref": "a", "hyps": [H(-0.1, "{a", -0.2, 2), H(-0.3, "a", -0.6, 2)], "image": a, "canvases": [[None], [a]]}]
    t = mod.tally(rows)
    assert (t["n"], t["top"], t["oracle"], t["valid_first"]) == (2, 0, 2, 1)
    assert (t["top_invalid"], t["top_invalid_valid_alternative"]) == (1, 1)
    assert t["render_compare"]["sigma 0, l1, lambda 1000"] == 2 == t["render_compare_best"]
    # the length penalty: raw log p (alpha 0) prefers the short right answer, the mean (alpha 1) the long
    # wrong one; "{a" is repaired to parse before it is scored, as train.eval repairs
    rows = [{"ref": "x + y = 1", "hyps": [H(-0.1, "x+y+y=1", -0.8, 8), H(-0.12, "x+y=1", -0.72, 6)]},
            {"ref": "a", "hyps": [H(-0.1, "{a", -0.2, 2), H(-0.3, "b", -0.6, 2)]}]
    sweep = mod.length_sweep(rows, (0.0, 1.0))
    assert (sweep["0"]["exact"], sweep["1"]["exact"]) == (2, 1)
    assert sweep["0"]["bleu4"] > sweep["1"]["bleu4"]
    canvas, = mod.drawn(["x+1"], ["engine"], (32, 128), 4.0)[0]
    assert canvas.shape == (32, 128) and canvas.max() > 0.5


def test_bidi_sweep_picks_by_each_weight_of_the_reversed_reading(capsys):
    """Weight 0 over the left-to-right candidates is the plain beam; the reversed reading can overrule
    it; the right-to-left beam's own candidates count only in the 'both' set; the candidates come from
    the recognizer's own hooks, and a one-way reader is refused with exit 2."""
    from builders import tiny_model
    from model import DecodeSpec
    mod = load_script("bidi_sweep")
    C = lambda text, l2r, fwd, bwd, n: {"text": text, "l2r": l2r, "fwd": fwd, "bwd": bwd, "length": n}  # noqa: E731
    rows = [{"ref": "x + 1", "cands": [C("x+2", True, -0.4, -4.0, 4), C("x+1", True, -0.8, -0.8, 4)]},
            {"ref": "a", "cands": [C("b", True, -0.2, -0.4, 2), C("a", False, -0.3, -0.05, 2)]}]
    t = mod.sweep(rows, (0.0, 1.0))
    assert (t["l2r"]["oracle"], t["both"]["oracle"]) == (1, 2)
    assert (t["l2r"]["0"]["exact"], t["l2r"]["1"]["exact"], t["both"]["1"]["exact"]) == (0, 1, 2)
    torch.manual_seed(0)
    rec = tiny_model("ar", canvas=(32, 128), bidirectional=True).eval()
    got = mod.candidates(rec, torch.rand(2, 1, 32, 128), 3)
    assert all(1 <= len(c) <= 6 and any(x["l2r"] for x in c) and all(x["length"] >= 1 for x in c) for c in got)
    images = torch.rand(2, 1, 32, 128)
    ways = mod.greedy_both_ways(rec, images)
    assert [a for a, _ in ways] == rec.recognize(images, DecodeSpec("greedy", valid=False))
    with pytest.raises(ValueError, match="reads one way only"):
        mod.candidates(tiny_model("ar", canvas=(32, 128)).eval(), torch.rand(1, 1, 32, 128), 2)


def test_device_tree_counts_what_a_device_call_sends(tmp_path, capsys):
    """Tracked files on disk and untracked ones git does not ignore travel, ignored ones only when
    carried; --aside leaves a folder out; over the limit is exit 1, a missing carry path exit 2."""
    tree = load_script("device_tree")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "w.pt").write_bytes(b"w" * 3000)
    (tmp_path / "code.py").write_bytes(b"c" * 100)
    (tmp_path / ".gitignore").write_text("/.carry/\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
    (tmp_path / "new.txt").write_bytes(b"n" * 10)
    (tmp_path / ".carry").mkdir()
    (tmp_path / ".carry" / "data.bin").write_bytes(b"d" * 500)
    sizes = tree.travel_files(tmp_path)
    assert sizes == {".gitignore": 9, "code.py": 100, "new.txt": 10, "weights/w.pt": 3000}
    assert tree.travel_files(tmp_path, carry=[".carry"])[".carry/data.bin"] == 500
    assert "weights/w.pt" not in tree.travel_files(tmp_path, aside=["weights/"])
    limit = 2000 / 2 ** 20
    assert tree.main(["--root", str(tmp_path), "--limit-mib", str(limit)]) == 1
    assert "OVER" in capsys.readouterr().out
    assert tree.main(["--root", str(tmp_path), "--limit-mib", str(limit), "--aside", "weights",
                      "--carry", ".carry"]) == 0
    assert tree.main(["--root", str(tmp_path), "--carry", "absent"]) == 2
    assert "absent" in capsys.readouterr().err


def test_the_printed_device_call_runs_both_readers_on_cpu(tmp_path):
    """gpu_print.sh SMOKE=1 on a shard folder with an extra train_* split: HVT and the AR baseline each
    train, are evaluated on valid and test, and come back as at most 8 files (the device tool's cap)."""
    from datasets_prep.shards import load_split, split_names, write_dataset_dict, write_split
    root = tmp_path / "printed"
    for split, seed in (("train", 1), ("valid", 2), ("test", 3)):
        generate(4, tmp_path / "ink", seed=seed, fmt="mathwriting", split=split)
    convert("mathwriting", inputs=[tmp_path / "ink"], out=root, size=(64, 512), workers=1, progress=False)
    write_split(root, "train_main1", load_split(root / "train"))
    write_dataset_dict(root, [*split_names(root), "train_main1"])
    out = tmp_path / "out"
    done = subprocess.run(["bash", str(BENCHMARKS / "gpu_print.sh"), str(out), str(root), "0.05"], cwd=REPO,
                          env={**os.environ, "SMOKE": "1", "DEGRADE": "0.5"}, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == sorted(f"{k}/{f}" for k in ("ar", "hvt")
                           for f in ("eval.json", "log.txt", "metrics.jsonl", f"print-{k}-gpu.pt")), files
    assert "train_main1" in (out / "hvt" / "log.txt").read_text()          # the extra split joined training
    assert load(out / "hvt" / "print-hvt-gpu.pt").recognizer.kind == "hvt"
    stored = torch.load(out / "ar" / "print-ar-gpu.pt", map_location="cpu", weights_only=True)
    assert stored["train_config"]["degrade"]["prob"] == 0.5                 # DEGRADE reached the trainer
    assert set(json.loads((out / "ar" / "eval.json").read_text())["results"]) == {"valid", "test"}
