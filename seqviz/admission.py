"""Whether the server takes a new run now: the per-lab cap and the queue's limit, in words when it does not.

Plain counts in, a sentence out: testable without Dask or a database (seqviz.jobs counts from the store).
"""

from __future__ import annotations

from dataclasses import dataclass

from seqviz import limits


class RunRefused(RuntimeError):
    """A run the server cannot take now (queue full, too many runs of this lab); the message says why."""


@dataclass(frozen=True)
class Load:
    running: int  # runs training now, across the store
    queued: int  # runs waiting for a worker, across the store
    lab_active: int  # the asking lab's queued and training runs


def admit(load: Load, max_active_per_lab: int = limits.TRAIN_MAX_ACTIVE_PER_OWNER,
          max_queued: int = limits.TRAIN_MAX_QUEUED) -> None:
    """Raise RunRefused, saying why, when a lab with this load may not start another run."""
    if load.lab_active >= max_active_per_lab:
        many = "a run" if load.lab_active == 1 else f"{load.lab_active} runs"
        raise RunRefused(f"You already have {many} queued or training, the most one lab may have "
                         "(seqviz.limits.TRAIN_MAX_ACTIVE_PER_OWNER): stop it or wait for it to end.")
    if load.queued >= max_queued:
        raise RunRefused(f"The server is busy: {load.running} runs training and {load.queued} waiting, the most it "
                         "takes (seqviz.limits.TRAIN_MAX_QUEUED). Try again in a few minutes.")
