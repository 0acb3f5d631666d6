"""Every RNG a training step touches, saved and restored per rank, as tensors and plain types (so a
checkpoint holding them loads with weights_only=True)."""
from __future__ import annotations

import numpy as np
import torch


def rng_state(device: torch.device) -> dict:
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    state = {"torch": torch.get_rng_state(),
             "numpy": {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                       "has_gauss": int(has_gauss), "gauss": float(gauss)}}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng(state: dict, device: torch.device) -> None:
    torch.set_rng_state(state["torch"])
    n = state["numpy"]
    np.random.set_state((n["kind"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["gauss"]))
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def restore_rng(saved: dict | list, rank: int, world: int, device: torch.device) -> str | None:
    """Restore this rank's saved state (a list, one per rank; older checkpoints hold rank 0's only).
    Returns a note when the resume cannot be exact (another number of processes, or one state)."""
    states = saved if isinstance(saved, list) else [saved]
    if len(states) == world:
        set_rng(states[rank], device)
        return None
    set_rng(states[0], device)
    return (f"the checkpoint holds RNG states for {len(states)} process(es) and this run has {world}: every rank "
            f"restarts from rank 0's, so dropout after the resume differs from an uninterrupted run")
