"""Shared pytest fixtures: where the real data lives, and skipping cleanly when it is absent."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# The machines that run the suite are shared and noisy: no property test fails on time. Hypothesis's
# per-example deadline and its "input generation is slow" check are timings, so both are off for every
# test (a test's own @settings still sets its example count).
settings.register_profile("shared-machines", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("shared-machines")

REPO = Path(__file__).resolve().parents[1]
DATA_ENV = "GRYPHONE_TEST_DATA"
SHARED_DATA = Path(os.environ.get(DATA_ENV) or REPO / ".." / "shared" / "data").resolve()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real corpora: $GRYPHONE_TEST_DATA, else ../shared/data beside the checkout; tests that
    need them skip without it."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not found at {SHARED_DATA} (set {DATA_ENV} to the folder holding crohme/, "
                    "mathwriting/ and latex/; a fresh clone has none)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture
def one_thread():
    """Tiny models: a second intra-op thread only adds synchronization (10x slower on a shared machine).
    Modules of tiny models use it with `pytestmark = pytest.mark.usefixtures("one_thread")`."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


class Payload:
    """Unpickling this runs `touch marker`: a crafted file that must never be loaded as objects."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))
