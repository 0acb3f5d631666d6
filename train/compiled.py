"""torch.compile for training and decoding: what is compiled, in one place.

Training compiles the recognizer's whole loss (forward and backward): the trainer draws the step's
random numbers outside it (`Recognizer.draws`), and batches have fixed shapes (every label padded to
`max_len`, every image the canvas), so one graph serves every step. Decoding compiles the parts a
recognizer calls with the same shapes at every step (`Recognizer.static_parts`: GryphOne's encoder and
its fixed-window decoder), in place, so the state dict keeps its names.
"""
from __future__ import annotations

import torch

from model import Recognizer


def compile_for_training(model: Recognizer) -> torch.nn.Module:
    """The compiled loss module the trainer calls (`module(images, batch)`); `model` keeps the weights."""
    return torch.compile(model, dynamic=False)


def compile_for_decoding(model: Recognizer) -> Recognizer:
    """`model` with its static-shape parts compiled in place; its outputs equal the eager ones'."""
    for name in model.static_parts:
        getattr(model, name).compile(dynamic=False)
    return model
