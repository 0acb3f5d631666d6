"""Reading the small files gryphone writes beside weights (an export's gryphone-onnx.json, an ensemble
file) as untrusted input, and the digest that pins a weights file: one way each, so every reader refuses
the same things with the same words."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from datasets_prep.local_files import FileRefused, read_capped

from .errors import CheckpointError


def read_spec_json(path: Path, max_bytes: int, fmt: str, what: str) -> dict:
    """The JSON object at `path` whose "format" is `fmt`; CheckpointError naming the file otherwise (too
    large, not a regular file, not JSON, another format: "not a gryphone {what}")."""
    try:
        spec = json.loads(read_capped(path, max_bytes))
    except FileRefused as exc:
        raise CheckpointError(f"{path}: {exc}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise CheckpointError(f"{path}: not JSON: {exc}") from None
    if not isinstance(spec, dict) or spec.get("format") != fmt:
        found = spec.get("format") if isinstance(spec, dict) else type(spec).__name__
        raise CheckpointError(f"{path}: not a gryphone {what} (format {found!r}, expected {fmt!r})")
    return spec


def sha256_file(path: Path) -> str:
    """The file's SHA-256, streamed (its size is not trusted before the check)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
