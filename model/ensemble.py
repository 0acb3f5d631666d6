"""Several trained token recognizers decoding as one: at each step the members' log-probabilities of
the next token are averaged (model/ensemble_spec.py has the file that names them; GryphOne models
ensemble in model/sat_ensemble.py).

Why: at a CPU budget one small reader is what a run buys, and readers trained with different seeds or
data mixes err differently. On CROHME's writer-disjoint validation split two AR readers of 110 minutes
each read 47.2% together against 43.9% and 41.7% alone (BENCHMARKS.md, "Ensembles of AR readers").

It is a Recognizer like the others for evaluation, prediction and the page: its members' own
`token_steps` hooks (model.search.TokenSteps) are combined step by step, so greedy and beam search are
model.search's, and members may be of different kinds (AR baseline, PosFormer, HVT) as long as they
read the same images (RenderSpec) into the same vocabulary. It is not trained: train its members.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn

from .ensemble_spec import check_members, ensemble_title
from .recognizer import DecodeSpec, Recognizer, RecognizerConfig
from .search import Step, TokenSteps, replay_probs, search_ids, with_reorder


@dataclass
class EnsembleConfig(RecognizerConfig):
    kind: str = "ensemble"
    member_kinds: tuple[str, ...] = ()


def mean_step(steps: list[Step]) -> Step:
    """One step of every member, their log-probabilities averaged; `reorder` reorders each member."""
    def step(last: torch.Tensor, pos: int) -> torch.Tensor:
        return torch.stack([s(last, pos).float().log_softmax(-1) for s in steps]).mean(0)

    def reorder(src: torch.Tensor) -> None:
        for s in steps:
            s.reorder(src)  # type: ignore[attr-defined]
    return with_reorder(step, reorder)


def mean_steps(parts: list[TokenSteps]) -> TokenSteps:
    """The members' hooks as one: steps and teacher-forced scores averaged in log-probability; right to
    left only over the members that learned it (a one-way member's reversed reading is noise), and not
    at all when none did."""
    def forced(i: int, ids: torch.Tensor) -> torch.Tensor:
        return torch.stack([p.forced(i, ids).float() for p in parts]).mean(0)  # type: ignore[misc]
    both = [p.r2l for p in parts if p.r2l is not None]
    return TokenSteps(parts[0].images, lambda: mean_step([p.rows() for p in parts]),
                      lambda i, width: mean_step([p.image(i, width) for p in parts]), min(p.max_len for p in parts),
                      parts[0].device, forced if all(p.forced is not None for p in parts) else None,
                      mean_steps(both) if both else None)


class MemberEnsemble(Recognizer):
    """What every ensemble of checkpoints shares: members that can join (model.ensemble_spec.check_members)
    and have the step hook the subclass averages (`hook`), a default sampler of its own, the shortest
    member's window, and no training."""

    kind = "ensemble"
    title = "an ensemble"
    hook: str = ""  # the members' step hook the ensemble averages

    def __init__(self, members: list[Recognizer], names: list[str] | None, default_sampler: str):
        names = names or [f"member {i + 1}" for i in range(len(members))]
        if not members:
            raise ValueError("an ensemble needs at least one member")
        check_members(members, names)
        for name, m in zip(names, members):
            if getattr(type(m), self.hook, None) in (None, getattr(Recognizer, self.hook, None)):
                raise ValueError(f"{name}: model.kind {m.kind} has no {self.hook.split('_')[0]} step hook ({self.hook})")
        if default_sampler not in self.samplers:
            raise ValueError(f"sampler {default_sampler!r}: {self.description.split(' (')[0]} decodes with "
                             f"{', '.join(self.samplers)}")
        cfg = EnsembleConfig(max_len=min(m.cfg.max_len for m in members), dropout=0.0,
                             member_kinds=tuple(m.kind for m in members))
        super().__init__(cfg, members[0].render, members[0].labels)
        self.members = nn.ModuleList(members)
        self.default_sampler = default_sampler
        self.title = ensemble_title([m.title or m.kind for m in members])

    def loss(self, images, batch, generator=None):
        raise ValueError("an ensemble is not trained: train its members (python -m train.run), then list them")

    def flops_per_image(self, train: bool = True) -> float:
        if train:
            raise ValueError("an ensemble is not trained")
        return sum(m.flops_per_image(False) for m in self.members)


class EnsembleRecognizer(MemberEnsemble):
    label_kind = "token"
    samplers = ("greedy", "beam")
    description = "an ensemble of token recognizers (their log-probabilities averaged per step)"
    hook = "token_steps"

    def __init__(self, members: list[Recognizer], names: list[str] | None = None, default_sampler: str = "greedy",
                 default_beam: int = 1):
        super().__init__(members, names, default_sampler)
        self.default_beam = default_beam

    def token_steps(self, images: torch.Tensor) -> TokenSteps:
        return mean_steps([m.token_steps(images) for m in self.members])

    @torch.no_grad()
    def decode_ids(self, images: torch.Tensor, spec: DecodeSpec, history: list | None = None) -> torch.Tensor:
        return search_ids(self.token_steps(images), spec.beam if spec.sampler == "beam" else 1,
                          bidirectional=spec.bidirectional)

    @torch.no_grad()
    def decode_scored(self, images: torch.Tensor, spec: DecodeSpec,
                      history: list | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The decoded ids and each token's probability under the averaged distribution, read by
        replaying the ids through fresh steps (the encoders run once)."""
        steps = self.token_steps(images)
        ids = search_ids(steps, spec.beam if spec.sampler == "beam" else 1, bidirectional=spec.bidirectional)
        return ids, replay_probs(steps.rows(), ids)
