"""model.encoder_init: every path a user can start an encoder from, and a clear error for each way a
file can fail (named file, no traceback, nothing executed)."""
from __future__ import annotations

import json
import os
import pickle
import struct

import pytest
import torch

from builders import tiny_model
from model import EncoderInitError, init_encoder
from model.checkpoint import save_checkpoint
from model.encoder import ViTEncoder
from conftest import Payload


def _timm_state(src: ViTEncoder) -> dict[str, torch.Tensor]:
    """src's weights under timm/DINO names (fused qkv, RGB patch kernel)."""
    sd = src.state_dict()
    out = {"cls_token": torch.zeros(1, 1, 32), "pos_embed": torch.zeros(1, 25, 32),
           "patch_embed.proj.weight": sd["patch_embed.weight"].repeat(1, 3, 1, 1) / 3,
           "patch_embed.proj.bias": sd["patch_embed.bias"]}
    for k, v in sd.items():
        if ".attn.q." in k:
            prefix, kind = k.split(".attn.q.")
            out[f"{prefix}.attn.qkv.{kind}"] = torch.cat([v, sd[f"{prefix}.attn.kv.{kind}"]])
        elif ".attn.kv." not in k and not k.startswith("patch_embed"):
            out[k] = v
    return out


def _hf_state(timm: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The same weights under transformers ViTModel names."""
    hf = {"embeddings.cls_token": timm["cls_token"], "embeddings.position_embeddings": timm["pos_embed"],
          "embeddings.patch_embeddings.projection.weight": timm["patch_embed.proj.weight"],
          "embeddings.patch_embeddings.projection.bias": timm["patch_embed.proj.bias"],
          "layernorm.weight": timm["norm.weight"], "layernorm.bias": timm["norm.bias"]}
    names = {"attn.proj": "attention.output.dense", "mlp.fc1": "intermediate.dense", "mlp.fc2": "output.dense",
             "norm1": "layernorm_before", "norm2": "layernorm_after"}
    for k, v in timm.items():
        if not k.startswith("blocks."):
            continue
        _, i, *rest = k.split(".")
        mod, kind = ".".join(rest[:-1]), rest[-1]
        if mod == "attn.qkv":
            for name, part in zip(("query", "key", "value"), v.chunk(3)):
                hf[f"vit.encoder.layer.{i}.attention.attention.{name}.{kind}"] = part
        else:
            hf[f"vit.encoder.layer.{i}.{names[mod]}.{kind}"] = v
    return hf


def _write_safetensors(path, tensors: dict[str, torch.Tensor]) -> None:
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        raw = t.detach().float().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(head)) + head + b"".join(blobs))


@pytest.fixture()
def pair():
    torch.manual_seed(0)
    return ViTEncoder((32, 48), 8, 32, 2, 2), ViTEncoder((32, 48), 8, 32, 2, 2)


@pytest.mark.parametrize("layout", ["timm", "timm-wrapped", "huggingface", "safetensors-hf"])
def test_foreign_vit_weights_reproduce_the_source_encoder(pair, tmp_path, layout):
    src, enc = pair
    timm = _timm_state(src)
    path = tmp_path / "w.pth"
    if layout == "timm":
        torch.save(timm, path)
    elif layout == "timm-wrapped":
        torch.save({"teacher": {f"backbone.{k}": v for k, v in timm.items()}}, path)
    elif layout == "huggingface":
        torch.save(_hf_state(timm), path)
    else:
        path = tmp_path / "model.safetensors"
        _write_safetensors(path, _hf_state(timm))
    info = init_encoder(enc, path)
    assert set(info["unused"]) == {"cls_token", "pos_embed"}
    x = torch.rand(2, 1, 32, 48)
    assert torch.allclose(enc(x), src(x), atol=1e-5)


@pytest.mark.parametrize("stem_blocks", [0, 1])
def test_gryphone_checkpoint_of_either_kind_starts_the_encoder(tmp_path, stem_blocks):
    base = dict(patch=16, enc_dim=32, enc_depth=1, enc_heads=2, dec_dim=32, dec_depth=1,
                dec_heads=2, max_len=8, conv_stem=True, stem_blocks=stem_blocks)
    ar = tiny_model("ar", **base)
    save_checkpoint(tmp_path / "ar.pt", {"train_config": {}, "model": ar.state_dict(), "ema": None,
                                         "vocab": {}, "step": 1})
    gry = tiny_model("diffusion", **base)
    info = init_encoder(gry.encoder, tmp_path / "ar.pt")
    assert info["kind"] == "gryphone" and not info["unused"]
    for k, v in ar.encoder.state_dict().items():
        assert torch.equal(gry.encoder.state_dict()[k], v), k


def _small_ar(**over):
    cfg = dict(patch=16, enc_dim=32, enc_depth=1, enc_heads=2, dec_dim=32, dec_depth=1, dec_heads=2, max_len=8)
    return tiny_model("ar", **{**cfg, **over})


def _save_ar(path, **over):
    save_checkpoint(path, {"train_config": {}, "model": _small_ar(**over).state_dict(), "ema": None,
                           "vocab": {}, "step": 1})


@pytest.mark.parametrize("saved,wanted", [(0, 1), (1, 0), (2, 1)])
def test_gryphone_checkpoint_with_another_stem_is_refused(tmp_path, saved, wanted):
    """A run started from a checkpoint trained with another model.stem_blocks must not load a shifted
    stem silently: the error names the file and the key to check."""
    _save_ar(tmp_path / "stem.pt", conv_stem=True, stem_blocks=saved)
    with pytest.raises(EncoderInitError, match=r"stem\.pt.*stem_blocks"):
        init_encoder(_small_ar(conv_stem=True, stem_blocks=wanted).encoder, tmp_path / "stem.pt")


def test_deeper_gryphone_checkpoint_is_refused(tmp_path):
    _save_ar(tmp_path / "deep.pt", enc_depth=2)
    with pytest.raises(EncoderInitError, match=r"deep\.pt.*lacks.*enc_depth"):
        init_encoder(_small_ar(enc_depth=1).encoder, tmp_path / "deep.pt")


def test_mismatched_weights_name_the_file_and_the_cause(pair, tmp_path):
    src, _ = pair
    torch.save(_timm_state(src), tmp_path / "narrow.pth")
    wide = ViTEncoder((32, 48), 8, 64, 2, 2)
    with pytest.raises(EncoderInitError, match=r"narrow\.pth.*do not fit this encoder"):
        init_encoder(wide, tmp_path / "narrow.pth")
    deep = ViTEncoder((32, 48), 8, 32, 3, 2)
    with pytest.raises(EncoderInitError, match=r"narrow\.pth.*lacks"):
        init_encoder(deep, tmp_path / "narrow.pth")
    (tmp_path / "junk.pth").write_bytes(b"not weights at all")
    with pytest.raises(EncoderInitError, match="junk.pth"):
        init_encoder(src, tmp_path / "junk.pth")
    with pytest.raises(EncoderInitError, match="missing.pth.*no such"):
        init_encoder(src, tmp_path / "missing.pth")
    (tmp_path / "bad.safetensors").write_bytes(struct.pack("<Q", 10**9) + b"{}")
    with pytest.raises(EncoderInitError, match="bad.safetensors"):
        init_encoder(src, tmp_path / "bad.safetensors")




def test_a_code_carrying_weight_file_is_refused_and_never_run(pair, tmp_path):
    src, _ = pair
    marker = tmp_path / "ran"
    raw = tmp_path / "evil.pkl"
    raw.write_bytes(pickle.dumps({"blocks.0.norm1.weight": Payload(str(marker))}))
    zipped = tmp_path / "evil.pth"
    torch.save({"model": {"x": Payload(str(marker))}}, zipped)
    for path in (raw, zipped):
        with pytest.raises(EncoderInitError, match=path.name):
            init_encoder(src, path)
    assert not marker.exists()
