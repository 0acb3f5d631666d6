"""`python -m datasets_prep.inkml`: MathWriting / CROHME InkML -> rendered images -> Arrow shards.

    python -m datasets_prep.inkml --src mathwriting --input mathwriting-2024.tgz --out shards/mathwriting
    python -m datasets_prep.inkml --src crohme --input CROHME/train CROHME/test2014 --out shards/crohme
    python -m datasets_prep.inkml --src crohme            # the bundled fixtures, into shards/crohme

The work is done by datasets_prep/convert.py (chunks, workers, --resume, quarantine.jsonl,
summary.json); the datasets are read by datasets_prep/sources/mathwriting.py and crohme.py.
"""
from __future__ import annotations

import sys

from .convert import UsageError, convert, parser
from .convert import main as _main
from .sources import INK_SOURCES

__all__ = ["convert", "main", "UsageError"]


def main(argv: list[str] | None = None) -> int:
    return _main(argv, parser("python -m datasets_prep.inkml", __doc__.split("\n\n")[0], INK_SOURCES, images=False))


if __name__ == "__main__":
    sys.exit(main())
