"""The drawing page's round trip: a formula drawn with pointer events in headless Chromium -> LaTeX
shown on the page, timed from the click on "Recognize" to the answer on screen, N times.

    python benchmarks/bench_serve.py --ckpt runs/demo/ckpt.pt [--n 20] [--writers 10] [--screenshot docs/serve-page.png]

Starts `python -m train.serve` (a separate process, as a user would), draws the synthesizer's ink of
--label into the canvas stroke by stroke, waits for the page to read it, then clicks Recognize --n
times in a row. --writers K first draws K synthetic writers (seeds --seed..) one after the other and
counts how many the page reads right. Prints the reading, p50/p90/min/max of the page's round trip and the server's own
time per request (stroke rasterizing + decoding), as JSON with --json. Needs what the browser test
needs (.ci/install-browser). Exit status: 0 measured (and read right unless --any); 1 read wrong or
the server did not start; 2 bad command line.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from serve_helpers import browser_missing, draw_ink, start_chromium, wait_for_answer  # noqa: E402

TIME_CLICKS = """
const n = arguments[0], done = arguments[arguments.length - 1], page = [], server = [];
function once(i) {
  if (i === n) { done({page: page, server: server}); return; }
  const t0 = performance.now();
  const obs = new MutationObserver(() => {
    const state = document.body.dataset.state;
    if (state !== 'done' && state !== 'error') return;
    obs.disconnect();
    page.push(performance.now() - t0);
    server.push(parseFloat((document.getElementById('meta').textContent.match(/([0-9.]+) ms/) || [0, NaN])[1]));
    setTimeout(() => once(i + 1), 50);
  });
  obs.observe(document.body, {attributes: true, attributeFilter: ['data-state']});
  document.getElementById('go').click();
}
once(0);
"""


def summary(xs: list[float]) -> dict:
    xs = sorted(xs)
    return {"p50": round(statistics.median(xs), 1), "p90": round(xs[int(0.9 * (len(xs) - 1))], 1),
            "min": round(xs[0], 1), "max": round(xs[-1], 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/bench_serve.py", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--label", default="x^{2}+3=7", help="what to draw (default: %(default)s, in the demo's symbols)")
    ap.add_argument("--seed", type=int, default=0, help="the synthetic writer's seed (default: %(default)s)")
    ap.add_argument("--writers", type=int, default=1, help="writers to draw and read (default: %(default)s)")
    ap.add_argument("--n", type=int, default=20, help="timed round trips (default: %(default)s)")
    ap.add_argument("--T", type=int, default=10, help="diffusion steps (default: %(default)s)")
    ap.add_argument("--threads", type=int, default=0, help="the server's torch threads, 0 = torch's choice")
    ap.add_argument("--screenshot", type=Path, help="save the page (after the first reading) as this PNG")
    ap.add_argument("--any", action="store_true", help="do not require the reading to equal --label")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    if args.n < 1:
        ap.error("--n must be at least 1")
    why = browser_missing()
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 1
    import numpy as np

    from datasets_prep.synth import synthesize

    inks = [synthesize(args.label, np.random.default_rng(args.seed + k)) for k in range(max(1, args.writers))]
    server = subprocess.Popen([sys.executable, "-m", "train.serve", "--ckpt", args.ckpt, "--port", "0", "--quiet",
                               "--T", str(args.T), "--threads", str(args.threads)],
                              cwd=REPO, stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    match = re.search(r"on (http://\S+/)", line)
    if not match:
        server.kill()
        print("error: the server did not start", file=sys.stderr)
        return 1
    try:
        with tempfile.TemporaryDirectory() as profile:
            driver = start_chromium(Path(profile))
            try:
                driver.get(match.group(1))
                from selenium.webdriver.support.ui import WebDriverWait

                WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.body.dataset.ready"))
                canvas = driver.find_element("id", "pad")
                readings = []
                for ink in reversed(inks):  # the --seed writer last: it is timed and pictured
                    driver.find_element("id", "clear").click()
                    t0 = time.perf_counter()
                    n = draw_ink(driver, canvas, ink, kinds=("pen",))
                    drawn_s = time.perf_counter() - t0
                    wait_for_answer(driver, str(n))
                    readings.append(driver.find_element("id", "latex").text)
                latex = readings[-1]
                if args.screenshot:
                    driver.save_screenshot(str(args.screenshot))
                driver.set_script_timeout(60 + 30 * args.n)
                times = driver.execute_async_script(TIME_CLICKS, args.n)
            finally:
                driver.quit()
    finally:
        server.terminate()
        server.wait(30)
    result = {"label": args.label, "read": latex, "right": latex == args.label, "strokes": n, "T": args.T,
              "writers": len(inks), "writers_right": sum(r == args.label for r in readings),
              "n": args.n, "page_ms": summary(times["page"]), "server_ms": summary(times["server"]),
              "drawing_s": round(drawn_s, 1)}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"drew {args.label!r} in {n} strokes; the page read {latex!r} ({'right' if result['right'] else 'WRONG'})")
        if len(inks) > 1:
            print(f"{result['writers_right']} of {len(inks)} writers (seeds {args.seed}..{args.seed + len(inks) - 1}) read right")
        for key in ("page_ms", "server_ms"):
            s = result[key]
            print(f"{key:>9}: p50 {s['p50']} ms, p90 {s['p90']}, min {s['min']}, max {s['max']} (n={args.n}, T={args.T})")
    return 0 if result["right"] or args.any else 1


if __name__ == "__main__":
    sys.exit(main())
