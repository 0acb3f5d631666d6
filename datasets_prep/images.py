"""`python -m datasets_prep.images`: image datasets (CoMER, TAMER, HME100K, IM2LATEX-100K, any folder) -> Arrow shards.

    python -m datasets_prep.images --src comer --input data.zip --out shards/comer
    python -m datasets_prep.images --src tamer --input data/crohme --out shards/tamer-crohme
    python -m datasets_prep.images --src hme100k --input HME100K --binarize --out shards/hme100k
    python -m datasets_prep.images --src folder --input my_images/ --split test --out shards/mine
    python -m datasets_prep.images --src im2latex --input im2latex100k/ --size 64x512 --out shards/im2latex

The same shards as the InkML converter (schema, canvas and margin, quarantine.jsonl, summary.json,
--resume, --preview, worker processes): each image is decoded safely, its ink found (either polarity),
cropped and fitted to the canvas as an ink is; its label goes through the tokenizer like an InkML
truth. The layouts are in datasets_prep/sources/ (comer.py, tamer.py, hme100k.py, im2latex.py, folder.py).
"""
from __future__ import annotations

import sys

from .convert import UsageError, convert, parser
from .convert import main as _main
from .sources import IMAGE_SOURCES

__all__ = ["convert", "main", "UsageError"]


def main(argv: list[str] | None = None) -> int:
    return _main(argv, parser("python -m datasets_prep.images", __doc__.split("\n\n")[0], IMAGE_SOURCES, images=True))


if __name__ == "__main__":
    sys.exit(main())
