"""Start a ViT encoder from weights trained elsewhere: a gryphone checkpoint of any kind, or a local
DINO / timm / Hugging Face (transformers) ViT file.

Why: trained from scratch, the encoder gives the diffusion decoder nothing to find (docs/model.md);
the published model starts from pretrained DINO weights. Every file is read without running code:
`torch.load(weights_only=True)` for pickled files, and our own reader for `.safetensors` (a JSON
header and raw little-endian arrays). Any key or shape mismatch is an error naming the file.
"""
from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np
import torch

from .encoder import ConvStem, ViTEncoder

SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64,
                      "I32": np.int32, "U8": np.uint8, "BOOL": np.bool_}
MAX_HEADER = 100 * 1024 * 1024


class EncoderInitError(ValueError):
    """A weight file that cannot start this encoder; the message names the file and the cause."""


def read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    """Parse a .safetensors file (bf16 is widened to float32); never executes anything from the file.

    Held to the format's own rules, every error naming the file: the header is a JSON object of
    {"dtype": str, "shape": [int...], "data_offsets": [int, int]} entries (plus a `__metadata__` of
    strings); the tensors tile the body exactly, in order, with no overlap, gap or alias (a 1 MB file
    must not yield 300 tensors on one shared body), and each holds shape x itemsize bytes."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EncoderInitError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) < 8:
        raise EncoderInitError(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", data[:8])
    if n > min(MAX_HEADER, len(data) - 8):
        raise EncoderInitError(f"{path}: safetensors header length {n} exceeds the file")
    try:
        header = json.loads(data[8: 8 + n])
    except RecursionError:
        raise EncoderInitError(f"{path}: safetensors header nests too deeply (a header is one flat object)") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EncoderInitError(f"{path}: safetensors header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise EncoderInitError(f"{path}: safetensors header is a JSON {type(header).__name__}, not an object")
    body = memoryview(data)[8 + n:]
    entries = []
    for name, info in header.items():
        if name == "__metadata__":
            if info is not None and not (isinstance(info, dict) and all(isinstance(v, str) for v in info.values())):
                raise EncoderInitError(f"{path}: safetensors __metadata__ is not an object of strings")
            continue
        entries.append((_entry(path, name, info), name))
    entries.sort(key=lambda e: (e[0][2], e[0][3]))
    end_of_last = 0
    out = {}
    for (dtype, shape, start, end), name in entries:
        if start != end_of_last:
            what = "overlaps the tensor before it" if start < end_of_last else "leaves a gap before it"
            raise EncoderInitError(f"{path}: tensor {name!r} (bytes {start}-{end}) {what}: tensors must tile "
                                   "the body exactly")
        if end > len(body):
            raise EncoderInitError(f"{path}: tensor {name!r} lies outside the file")
        end_of_last = end
        itemsize = 2 if dtype == "BF16" else np.dtype(SAFETENSORS_DTYPES[dtype]).itemsize
        count = math.prod(shape)  # exact: numpy's int64 product wraps ([2**32, 2**32] -> 0) or overflows
        if count * itemsize != end - start:
            raise EncoderInitError(f"{path}: tensor {name!r} holds {end - start} bytes, its shape {shape} and "
                                   f"dtype {dtype} need {count * itemsize}")
        raw = body[start:end]
        if dtype == "BF16":
            arr = (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype=SAFETENSORS_DTYPES[dtype])
        out[name] = torch.from_numpy(arr.reshape(shape).copy())
    if end_of_last != len(body):
        raise EncoderInitError(f"{path}: {len(body) - end_of_last} bytes after the last tensor belong to none")
    return out


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _entry(path: Path, name: str, info) -> tuple[str, list[int], int, int]:
    """(dtype, shape, start, end) of one header entry, every type checked."""
    if not isinstance(info, dict):
        raise EncoderInitError(f"{path}: safetensors entry {name[:80]!r} is a {type(info).__name__}, not an object")
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if not isinstance(dtype, str):
        raise EncoderInitError(f"{path}: tensor {name[:80]!r} has no dtype string")
    if dtype != "BF16" and dtype not in SAFETENSORS_DTYPES:
        raise EncoderInitError(f"{path}: tensor {name[:80]!r} has unsupported dtype {dtype[:20]!r}")
    if not isinstance(shape, list) or len(shape) > 8 or not all(_int(d) for d in shape):
        raise EncoderInitError(f"{path}: tensor {name[:80]!r} shape is not a list of sizes")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(_int(o) for o in offsets) \
            or offsets[0] > offsets[1]:
        raise EncoderInitError(f"{path}: tensor {name[:80]!r} data_offsets is not [start, end] in bytes")
    return dtype, shape, offsets[0], offsets[1]


def read_weights(path: str | Path) -> dict:
    """The file's top-level object: a safetensors dict, or what `torch.load(weights_only=True)` gives."""
    path = Path(path)
    if not path.is_file():
        raise EncoderInitError(f"{path}: no such weight file")
    if path.suffix == ".safetensors":
        return read_safetensors(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for corrupt or code-carrying files
        raise EncoderInitError(f"{path}: cannot read weights safely (corrupt, or not plain tensors): "
                               f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    if not isinstance(state, dict):
        raise EncoderInitError(f"{path}: expected a dict of weights, found {type(state).__name__}")
    return state


def _hf_to_timm(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """transformers ViTModel / DINO names (`encoder.layer.N.attention.attention.query`) -> timm names."""
    out = {}
    for key, v in state.items():
        k = key.removeprefix("vit.")
        if k.startswith("embeddings.patch_embeddings.projection."):
            out["patch_embed.proj." + k.rsplit(".", 1)[1]] = v
        elif k == "embeddings.cls_token":
            out["cls_token"] = v
        elif k == "embeddings.position_embeddings":
            out["pos_embed"] = v
        elif k.startswith("layernorm."):
            out["norm." + k.rsplit(".", 1)[1]] = v
        elif k.startswith("encoder.layer."):
            parts = k.split(".")
            i, rest, kind = parts[2], ".".join(parts[3:-1]), parts[-1]
            names = {"attention.attention.query": "attn.q_", "attention.attention.key": "attn.k_",
                     "attention.attention.value": "attn.v_", "attention.output.dense": "attn.proj",
                     "intermediate.dense": "mlp.fc1", "output.dense": "mlp.fc2",
                     "layernorm_before": "norm1", "layernorm_after": "norm2"}
            if rest not in names:
                out[key] = v
                continue
            out[f"blocks.{i}.{names[rest]}.{kind}"] = v
        else:
            out[key] = v
    for key in [k for k in out if ".attn.q_." in k]:  # fuse q, k, v as timm does
        prefix, kind = key.split(".attn.q_.")
        parts = [out.pop(f"{prefix}.attn.{c}_.{kind}", None) for c in "qkv"]
        if any(p is None for p in parts):
            raise KeyError(f"{prefix}: query/key/value weights incomplete")
        out[f"{prefix}.attn.qkv.{kind}"] = torch.cat(parts)
    return out


def _timm_to_ours(encoder: ViTEncoder, state: dict[str, torch.Tensor]) -> tuple[dict, list[str]]:
    ours, unused = {}, []
    for key, value in state.items():
        if key == "patch_embed.proj.weight":
            if isinstance(encoder.patch_embed, ConvStem):
                unused.append(key)
                continue
            ours["patch_embed.weight"] = value.sum(dim=1, keepdim=True)  # RGB kernel -> one grey channel
        elif key == "patch_embed.proj.bias":
            ours["patch_embed.bias"] = value
        elif ".attn.qkv." in key:
            dim = value.shape[0] // 3
            prefix, kind = key.split(".attn.qkv.")
            ours[f"{prefix}.attn.q.{kind}"] = value[:dim]
            ours[f"{prefix}.attn.kv.{kind}"] = value[dim:]
        elif key.startswith(("blocks.", "norm.")):
            ours[key] = value
        else:
            unused.append(key)
    return ours, unused


def _unwrap(state: dict) -> tuple[dict, str]:
    """(encoder-ish state dict, what kind of file it was)."""
    fmt = state.get("format")
    if isinstance(fmt, str) and fmt.startswith("gryphone-checkpoint"):
        weights = state.get("ema") or state.get("model")
        if not isinstance(weights, dict):
            raise KeyError("gryphone checkpoint without model weights")
        return {k[len("encoder."):]: v for k, v in weights.items() if k.startswith("encoder.")}, "gryphone"
    for key in ("model", "state_dict", "teacher", "student"):
        if key in state and isinstance(state[key], dict):
            state = state[key]
    state = {k.removeprefix("module.").removeprefix("backbone."): v for k, v in state.items()
             if isinstance(v, torch.Tensor)}
    if any(k.startswith(("encoder.layer.", "vit.encoder.layer.", "embeddings.")) for k in state):
        return _hf_to_timm(state), "huggingface"
    return state, "timm"


def init_encoder(encoder: ViTEncoder, path: str | Path) -> dict:
    """Load weights from `path` into `encoder`; returns {"kind", "loaded", "unused"}.

    A gryphone checkpoint must match exactly (same encoder config); DINO/timm/HF files may leave their
    class token and learned positions unused (ours are fixed sin-cos) but must cover every block.
    Raises EncoderInitError naming the file on anything else.
    """
    path = Path(path)
    state = read_weights(path)
    try:
        weights, kind = _unwrap(state)
        unused: list[str] = []
        if kind != "gryphone":
            weights, unused = _timm_to_ours(encoder, weights)
    except KeyError as exc:
        raise EncoderInitError(f"{path}: not an encoder weight file: {exc}") from None
    params = encoder.state_dict()
    bad_shape = [f"{k} {tuple(v.shape)} vs ours {tuple(params[k].shape)}" for k, v in weights.items()
                 if k in params and params[k].shape != v.shape]
    if bad_shape:
        raise EncoderInitError(f"{path}: {len(bad_shape)} weights do not fit this encoder, e.g. "
                               f"{'; '.join(bad_shape[:3])} (check enc_dim, enc_depth, patch, patch_w, conv_stem, stem_blocks)")
    unused += [k for k in weights if k not in params]
    if kind == "gryphone" and unused:
        raise EncoderInitError(f"{path}: its encoder has {len(unused)} weights this one lacks, e.g. {unused[:3]}"
                               f" (check enc_depth, conv_stem, stem_blocks)")
    missing = [k for k in params if k not in weights]
    if kind != "gryphone" and isinstance(encoder.patch_embed, ConvStem):
        missing = [k for k in missing if not k.startswith("patch_embed.")]  # a conv stem starts fresh
    if missing:
        raise EncoderInitError(f"{path}: {kind} file lacks {len(missing)} encoder weights, e.g. {missing[:3]}"
                               f" (check enc_depth, conv_stem, stem_blocks and the key names)")
    encoder.load_state_dict({k: v for k, v in weights.items() if k in params}, strict=False)
    return {"kind": kind, "loaded": len([k for k in weights if k in params]), "unused": unused}


def load_vit_checkpoint(encoder: ViTEncoder, path: str | Path) -> list[str]:
    """DINO/timm/HF weights into `encoder`; returns the keys left unused (see init_encoder)."""
    return init_encoder(encoder, path)["unused"]
