"""`--threads` for every command that runs a model. Why a default below the core count: torch takes
every core by default, and two such jobs on one machine oversubscribe it (BENCHMARKS.md: train.predict
beside a 2-thread job read 2.7 images/s, against 178 with one thread)."""
from __future__ import annotations

import argparse
import os


def default_threads() -> int:
    """Half the cores this process may use, at least one."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, cores // 2)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def add_threads_arg(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--threads", type=positive_int, default=default_threads(),
                    help="CPU threads for the model (default: half the cores, %(default)s here)")


def apply_threads(n: int) -> None:
    import torch

    torch.set_num_threads(n)
