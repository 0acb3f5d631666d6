"""Printed formulas through a real TeX (`latex` + `dvipng`), where one is installed: the real look.

Why optional: the layout engine (printed.py) needs no TeX and draws ~95% of IM2LATEX's formulas;
real TeX draws every formula it compiles with Computer Modern, as the published datasets were made.
Nothing here is installed by the project; `check_tex()` names the Debian packages when it is missing.

Each formula is compiled alone, in a fresh temporary folder, as `$\\displaystyle ...$` in an article
with amsmath/amssymb, by `latex -no-shell-escape -interaction=nonstopmode -halt-on-error`, with
`openin_any=p`/`openout_any=p` (TeX's paranoid file access: no absolute paths, no parent folders, no
dot files) and a timeout, since a corpus line is untrusted input to a programming language. dvipng
crops to the ink (`-T tight`) at `dpi`; a margin is added around it.
"""
from __future__ import annotations

import io
import os
import shutil
import subprocess
import tempfile

import numpy as np
from PIL import Image

from .errors import SynthError

DEBIAN_PACKAGES = ("texlive-latex-base", "texlive-latex-recommended", "texlive-fonts-recommended", "dvipng")
TOOLS = ("latex", "dvipng")
PREAMBLE = (r"\documentclass[12pt]{article}\usepackage{amsmath,amssymb}\pagestyle{empty}"
            r"\begin{document}")
DEFAULT_DPI = 160  # about 20 px per em of 12 pt Computer Modern: the size printed.PrintStyle draws


class TexUnavailable(RuntimeError):
    """`latex` or `dvipng` is not on PATH; the message says what to install."""


def check_tex() -> None:
    """Raise TexUnavailable, naming the Debian packages, unless both tools are on PATH."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        raise TexUnavailable(f"--renderer tex needs {' and '.join(TOOLS)} on PATH (missing: {', '.join(missing)}); "
                             f"on Debian/Ubuntu: apt-get install {' '.join(DEBIAN_PACKAGES)}")


def render_tex(latex: str, *, dpi: int = DEFAULT_DPI, margin: int = 4, timeout: float = 30.0) -> np.ndarray:
    """The formula typeset by TeX: uint8 gray [H, W], 255 = background. Raises SynthError when TeX
    refuses it (the first error line of the log is the reason), TexUnavailable without TeX."""
    check_tex()
    body = " ".join(latex.split())
    if not body:
        raise SynthError(latex, "empty formula")
    env = {**os.environ, "openin_any": "p", "openout_any": "p"}
    with tempfile.TemporaryDirectory(prefix="gryphone-tex-") as tmp:
        with open(os.path.join(tmp, "f.tex"), "w", encoding="utf-8") as f:
            f.write(f"{PREAMBLE}\n$\\displaystyle {body}$\n\\end{{document}}\n")
        try:
            run = subprocess.run(["latex", "-no-shell-escape", "-interaction=nonstopmode", "-halt-on-error", "f.tex"],
                                 cwd=tmp, env=env, capture_output=True, timeout=timeout)
            if run.returncode != 0 or not os.path.isfile(os.path.join(tmp, "f.dvi")):
                raise SynthError(latex, f"latex failed: {_first_error(run.stdout)}")
            run = subprocess.run(["dvipng", "-q", "-T", "tight", "-D", str(int(dpi)), "-bg", "White", "-fg", "Black",
                                  "-o", "f.png", "f.dvi"], cwd=tmp, env=env, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise SynthError(latex, f"TeX took longer than {timeout:g} s") from None
        png = os.path.join(tmp, "f.png")
        if run.returncode != 0 or not os.path.isfile(png):
            raise SynthError(latex, f"dvipng failed: {run.stderr.decode(errors='replace').strip()[:200]}")
        with open(png, "rb") as f:
            gray = np.asarray(Image.open(io.BytesIO(f.read())).convert("L"))
    return np.pad(gray, margin, constant_values=255)


def _first_error(log: bytes) -> str:
    """TeX's first `! ...` line (what went wrong), else the log's tail."""
    text = log.decode(errors="replace")
    for line in text.splitlines():
        if line.startswith("!"):
            return line[1:].strip()[:200]
    return text.strip()[-200:] or "no output"
