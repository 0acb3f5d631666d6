"""`model.attn_dropout=false`: no dropout on attention weights, every other dropout kept, for every
recognizer built through the seam; a checkpoint without the key keeps the old behaviour."""
from __future__ import annotations

import pytest
import torch

from model.errors import RecognizerConfigError
from model.layers import Attention, WeightsDropout
from model.registry import RECOGNIZERS, config_from_dict
from train.config import apply_overrides, preset

from builders import tiny_model


def attention_rates(model) -> list[float]:
    """The dropout rate on each attention module's weights."""
    return [m.dropout for m in model.modules() if isinstance(m, WeightsDropout)]


def dropout_rates(model) -> list[float]:
    """Every other dropout: residual, MLP, embeddings, readout."""
    return [m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)]


@pytest.mark.parametrize("kind", sorted(RECOGNIZERS))
def test_off_clears_attention_weights_dropout_only(kind):
    on = tiny_model(kind, dropout=0.2)
    off = tiny_model(kind, dropout=0.2, attn_dropout=False)
    assert dropout_rates(off) == dropout_rates(on)  # residual / MLP / embedding dropout unchanged
    assert all(rate == 0.0 for rate in attention_rates(off))
    if kind != "hvt":  # HVT's decoder attends with its coverage attention (no Attention module there)
        assert 0.2 in attention_rates(on)


def test_attention_without_its_dropout_is_deterministic_in_training():
    torch.manual_seed(0)
    model = tiny_model("ar", dropout=0.3, attn_dropout=False).train()
    attn = next(m for m in model.modules() if isinstance(m, Attention))
    x = torch.randn(2, 5, attn.q.in_features)
    assert torch.equal(attn(x), attn(x))


def test_a_stored_config_without_the_key_keeps_attention_dropout():
    cfg = config_from_dict({"kind": "ar", "dropout": 0.1})
    assert cfg.attn_dropout is True


def test_the_override_parses_and_a_non_bool_is_refused():
    cfg = apply_overrides(preset("micro"), ["model.kind=ar", "model.attn_dropout=false"])
    assert cfg.model.attn_dropout is False
    with pytest.raises(RecognizerConfigError, match="attn_dropout"):
        tiny_model("ar", attn_dropout="yes")
