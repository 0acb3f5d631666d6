"""Printed formulas through a real TeX (`latex` + `dvipng`), where one is installed: the real look.

Why optional: the layout engine (printed.py) needs no TeX and draws ~95% of IM2LATEX's formulas;
real TeX draws every formula it compiles, in Computer Modern as the published datasets were made, or
in Times or Palatino (FONTS), as other documents are.
Nothing here is installed by the project; `check_tex()` names the Debian packages when it is missing.

Each formula is compiled alone, in a fresh temporary folder, as `$\\displaystyle ...$` in an article
with amsmath and the font's symbols, by `latex -no-shell-escape -interaction=nonstopmode -halt-on-error`, with
`openin_any=p`/`openout_any=p` (TeX's paranoid file access: no absolute paths, no parent folders, no
dot files) and a timeout, since a corpus line is untrusted input to a programming language. dvipng
crops to the ink (`-T tight`) at `dpi`; a margin is added around it.

`render_tex_batch` typesets many formulas in one run, a page each (one latex and one dvipng process
for the lot instead of two per formula: process start-up is most of TeX's cost here). A batch TeX
refuses is split in halves until the formula it refuses is alone, so every formula gets exactly the
answer `render_tex` gives it; a formula that could reach past its own page (definitions, category
codes, `\\global`, page or output commands) is always typeset alone.
"""
from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence

import numpy as np
from PIL import Image

from .errors import SynthError

DEBIAN_PACKAGES = ("texlive-latex-base", "texlive-latex-recommended", "texlive-fonts-recommended", "dvipng")
TOOLS = ("latex", "dvipng")
FONTS = {"cm": r"\usepackage{amsmath,amssymb}",
         "times": r"\usepackage{amsmath}\usepackage{txfonts}",
         "palatino": r"\usepackage{amsmath}\usepackage{pxfonts}",
         "euler": r"\usepackage{amsmath,amssymb}\usepackage{euler}",
         "sans": r"\usepackage{amsmath,amssymb}\usepackage{sansmath}\sansmath",
         "kpfonts": r"\usepackage{amsmath}\usepackage{kpfonts}",
         "utopia": r"\usepackage{amsmath,amssymb}\usepackage{fourier}",
         "charter": r"\usepackage{amsmath}\usepackage[charter]{mathdesign}",
         "stix2": r"\usepackage{amsmath}\usepackage{stix2}",
         "schoolbook": r"\usepackage{amsmath,amssymb}\usepackage{fouriernc}"}
"""The math fonts TeX draws with: Computer Modern (how the published datasets were typeset), Times and
Palatino (txfonts / pxfonts, from the packages above; each carries the AMS symbols itself, so
amssymb, which would clash with them, is not loaded); Zapf's Euler (upright letters and Greek, as in
Concrete Mathematics) and sans-serif math (sansmath over Computer Modern Sans, as slides set their
formulas), two looks far from the other three, which `benchmarks/print_cpu.sh` keeps out of training
as test splits of fonts a reader never saw. Those five come with DEBIAN_PACKAGES; the last five
(Kp-Fonts, Utopia with Fourier, Charter with MathDesign, STIX Two, New Century Schoolbook with
Fourier) need FONT_PACKAGES' package too, more faces for a reader to train on where a data-making
machine has it."""
_FONT_STY = {"kpfonts": "kpfonts.sty", "utopia": "fourier.sty", "charter": "mathdesign.sty",
             "stix2": "stix2.sty", "schoolbook": "fouriernc.sty"}
FONT_PACKAGES = {font: "texlive-fonts-extra" for font in _FONT_STY}
"""The Debian package, beyond DEBIAN_PACKAGES, each font needs (1.4 GB installed: not one CI installs)."""
BASE_FONTS = tuple(font for font in FONTS if font not in FONT_PACKAGES)
"""The fonts every TeX with DEBIAN_PACKAGES has (cm, times, palatino, euler, sans)."""


def preamble(font: str = "cm") -> str:
    """The document head for `font` (a FONTS key; ValueError otherwise)."""
    if font not in FONTS:
        raise ValueError(f"unknown TeX font {font!r} (choose from {', '.join(FONTS)})")
    return rf"\documentclass[12pt]{{article}}{FONTS[font]}\pagestyle{{empty}}\begin{{document}}"


PREAMBLE = preamble("cm")
DEFAULT_DPI = 160  # about 20 px per em of 12 pt Computer Modern: the size printed.PrintStyle draws


class TexUnavailable(RuntimeError):
    """`latex` or `dvipng` is not on PATH; the message says what to install."""


def font_available(font: str) -> bool:
    """Whether this TeX has what `font` (a FONTS key) needs: its style file, found by `kpsewhich`.
    The five fonts of DEBIAN_PACKAGES are taken as present wherever TeX is."""
    sty = _FONT_STY.get(font)
    if sty is None:
        return True
    tool = shutil.which("kpsewhich")
    if tool is None:
        return False
    found = subprocess.run([tool, sty], capture_output=True, text=True, timeout=30)
    return found.returncode == 0 and bool(found.stdout.strip())


def check_fonts(fonts: Iterable[str]) -> None:
    """Raise ValueError on a name FONTS lacks, and TexUnavailable, naming the Debian package, when TeX
    lacks a font's files (otherwise every formula in it would be refused, one by one)."""
    for font in fonts:
        preamble(font)
        if not font_available(font):
            raise TexUnavailable(f"TeX font {font!r} needs {_FONT_STY[font]}, which this TeX lacks; "
                                 f"on Debian/Ubuntu: apt-get install {FONT_PACKAGES[font]}")


def check_tex() -> None:
    """Raise TexUnavailable, naming the Debian packages, unless both tools are on PATH."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        raise TexUnavailable(f"--renderer tex needs {' and '.join(TOOLS)} on PATH (missing: {', '.join(missing)}); "
                             f"on Debian/Ubuntu: apt-get install {' '.join(DEBIAN_PACKAGES)}")


def render_tex(latex: str, *, dpi: int = DEFAULT_DPI, margin: int = 4, timeout: float = 30.0,
               font: str = "cm") -> np.ndarray:
    """The formula typeset by TeX in `font` (FONTS): uint8 gray [H, W], 255 = background. Raises
    SynthError when TeX refuses it (the first error line of the log is the reason), TexUnavailable
    without TeX."""
    check_tex()
    head = preamble(font)
    body = " ".join(latex.split())
    if not body:
        raise SynthError(latex, "empty formula")
    try:
        gray, = _typeset([body], dpi, timeout, head)
    except _Refused as exc:
        raise SynthError(latex, exc.reason) from None
    return np.pad(gray, margin, constant_values=255)


class _Refused(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _typeset(bodies: list[str], dpi: int, timeout: float, head: str = PREAMBLE) -> list[np.ndarray]:
    """Each body on a page of its own in one document, typeset and cropped to its ink; _Refused (with
    TeX's first error line) when latex or dvipng refuses the document or the pages do not match."""
    env = {**os.environ, "openin_any": "p", "openout_any": "p"}
    with tempfile.TemporaryDirectory(prefix="gryphone-tex-") as tmp:
        with open(os.path.join(tmp, "f.tex"), "w", encoding="utf-8") as f:
            f.write(head + "\n" + "".join(f"$\\displaystyle {b}$\n\\newpage\n" for b in bodies) + "\\end{document}\n")
        try:
            run = subprocess.run(["latex", "-no-shell-escape", "-interaction=nonstopmode", "-halt-on-error", "f.tex"],
                                 cwd=tmp, env=env, capture_output=True, timeout=timeout)
            if run.returncode != 0 or not os.path.isfile(os.path.join(tmp, "f.dvi")):
                raise _Refused(f"latex failed: {_first_error(run.stdout)}")
            run = subprocess.run(["dvipng", "-q", "-T", "tight", "-D", str(int(dpi)), "-bg", "White", "-fg", "Black",
                                  "-o", "p%d.png", "f.dvi"], cwd=tmp, env=env, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise _Refused(f"TeX took longer than {timeout:g} s") from None
        files = [os.path.join(tmp, f"p{k}.png") for k in range(1, len(bodies) + 2)]
        if run.returncode != 0:
            raise _Refused(f"dvipng failed: {run.stderr.decode(errors='replace').strip()[:200]}")
        made = sum(map(os.path.isfile, files))
        if made != len(bodies) or os.path.isfile(files[-1]):
            raise _Refused(f"dvipng made {made} pages for {len(bodies)} formula(s)")
        pages = []
        for path in files[:-1]:
            with open(path, "rb") as f:
                pages.append(np.asarray(Image.open(io.BytesIO(f.read())).convert("L")))
        return pages


LEAKY = re.compile(r"\\(?:global|[gex]?def|let|futurelet|catcode|makeatletter|makeatother|(?:re)?newcommand|providecommand|"
                   r"newenvironment|renewenvironment|csname|endcsname|expandafter|afterassignment|aftergroup|everymath|"
                   r"everydisplay|everypar|output|newpage|clearpage|pagebreak|vfill|shipout|special|input|include|"
                   r"setcounter|addtocounter|setlength|addtolength|end(?![a-zA-Z])|begin\s*\{\s*document|documentclass|"
                   r"usepackage|batchmode|nonstopmode|scrollmode|errorstopmode)(?![a-zA-Z])")
"""Commands whose effect could outlast the formula's own page in a shared document."""


def batchable(latex: str) -> bool:
    """Whether a formula may share a document with others (see LEAKY)."""
    return LEAKY.search(latex) is None and "%" not in latex.replace("\\%", "")


def render_tex_batch(latexes: Sequence[str], *, dpi: int = DEFAULT_DPI, margin: int = 4, timeout: float = 120.0,
                     batch: int = 64, font: str = "cm") -> list[np.ndarray | SynthError]:
    """render_tex for many formulas in one font: each item is the image render_tex gives (uint8 gray
    [H, W]) or the SynthError it raises; `batch` formulas share one document (see the module doc)."""
    check_tex()
    preamble(font)  # a bad font name fails here, before any work
    out: list[np.ndarray | SynthError | None] = [None] * len(latexes)
    shared = []
    for i, latex in enumerate(latexes):
        body = " ".join(latex.split())
        if not body:
            out[i] = SynthError(latex, "empty formula")
        elif batchable(body):
            shared.append(i)
        else:
            out[i] = _alone(latex, dpi, margin, timeout, font)
    for start in range(0, len(shared), batch):
        _batch_into(out, latexes, shared[start:start + batch], dpi, margin, timeout, font)
    return out  # type: ignore[return-value]


def _alone(latex: str, dpi: int, margin: int, timeout: float, font: str) -> np.ndarray | SynthError:
    try:
        return render_tex(latex, dpi=dpi, margin=margin, timeout=timeout, font=font)
    except SynthError as exc:
        return exc


def _batch_into(out: list, latexes: Sequence[str], idx: list[int], dpi: int, margin: int, timeout: float,
                font: str) -> None:
    """Typeset latexes[idx] in one document into out[idx]; halves on a refusal (one alone: render_tex)."""
    if len(idx) == 1:
        out[idx[0]] = _alone(latexes[idx[0]], dpi, margin, timeout, font)
        return
    try:
        pages = _typeset([" ".join(latexes[i].split()) for i in idx], dpi, timeout, preamble(font))
    except _Refused:
        half = len(idx) // 2
        _batch_into(out, latexes, idx[:half], dpi, margin, timeout, font)
        _batch_into(out, latexes, idx[half:], dpi, margin, timeout, font)
        return
    for i, gray in zip(idx, pages):
        out[i] = np.pad(gray, margin, constant_values=255)


def _first_error(log: bytes) -> str:
    """TeX's first `! ...` line (what went wrong), else the log's tail."""
    text = log.decode(errors="replace")
    for line in text.splitlines():
        if line.startswith("!"):
            return line[1:].strip()[:200]
    return text.strip()[-200:] or "no output"
