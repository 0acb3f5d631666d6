"""A local recognition server and drawing page: `python -m train.serve --ckpt CKPT`.

Modules, one job each: `backend` (the only one that touches train/ internals: loading a checkpoint,
drawing strokes as the shards were drawn, decoding with the sampler's history), `intake` (turning a
request body into strokes or image bytes, with every limit), `formula` (LaTeX -> SVG through the
synthesizer's layout engine), `app` (the HTTP server and its routes), `static/` (the page).
"""
