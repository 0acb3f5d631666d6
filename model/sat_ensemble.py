"""Several trained GryphOne models refining as one: at every refinement step each member predicts every
position of the current (partly masked) answer, and their log-probabilities of each position's symbol
and modifier are averaged; the samplers (remask, remask-keep, mask-predict) run on that average
exactly as on one model's (model/gryphone/diffusion.py). The ensemble file is the token ensembles'
(model/ensemble_spec.py), with `sampler` one of GryphOne's and `T` its steps.

Why: on CROHME's writer-disjoint validation split two GryphOne models of 110 CPU minutes each that
started from different weights read more together than either alone (BENCHMARKS.md, "GryphOne
ensembles"). The page still shows the answer settling step by step: the steps are the average's.
It is not trained: train its members.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import torch
import torch.nn as nn

from .decoding import DecodeSpec
from .ensemble import MemberEnsemble
from .gryphone.diffusion import _no_mask
from .gryphone.recognizer import GryphOne
from .recognizer import Recognizer


class MeanSATStep(nn.Module):
    """The members' refinement steps as one: `forward(symbols, modifiers, memories)` with one memory per
    member gives {"sym", "mod"}: the members' log-probabilities averaged (MASK excluded, as it is from
    every step's prediction)."""

    def __init__(self, steps: list, max_len: int):
        super().__init__()
        self.steps, self.max_len = steps, max_len

    def forward(self, symbols: torch.Tensor, modifiers: torch.Tensor, memories: list) -> dict[str, torch.Tensor]:
        outs = [step(symbols, modifiers, memory) for step, memory in zip(self.steps, memories)]
        return {k: torch.stack([_no_mask(o[k]).log_softmax(-1) for o in outs]).mean(0) for k in ("sym", "mod")}


class SATEnsemble(MemberEnsemble):
    label_kind = "sat"
    samplers = GryphOne.samplers
    step_samplers = GryphOne.step_samplers
    description = "an ensemble of GryphOne models (their log-probabilities averaged per refinement step)"
    hook = "sat_steps"

    def __init__(self, members: list[Recognizer], names: list[str] | None = None, default_sampler: str = "mask-predict",
                 default_T: int = 10):
        super().__init__(members, names, default_sampler)
        self.default_T = default_T

    def targets(self, latex: str) -> dict[str, np.ndarray]:
        return self.members[0].targets(latex)

    def sat_steps(self, images: torch.Tensor) -> tuple[MeanSATStep, list]:
        """GryphOne's hook over every member: their steps averaged, their memories side by side."""
        parts = [m.sat_steps(images) for m in self.members]
        return MeanSATStep([p[0] for p in parts], self.cfg.max_len), [p[1] for p in parts]

    decode_sat = GryphOne.decode_sat   # the samplers over this hook, as for one model

    @torch.no_grad()
    def recognize(self, images: torch.Tensor, spec: DecodeSpec | None = None, history: list | None = None,
                  stats: Counter | None = None, confidences: list | None = None) -> list[str]:
        spec = spec or DecodeSpec(self.default_sampler, T=self.default_T)
        return GryphOne.recognize(self, images, spec, history, stats, confidences)
