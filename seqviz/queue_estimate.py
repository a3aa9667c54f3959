"""When a waiting run is expected to start: from the runs training now, the runs ahead of it, and the pace of
runs of the same shape that ended before. Plain numbers in and out (no Dask, no database).
"""

from __future__ import annotations

from dataclasses import dataclass

from seqviz import limits

# Until a run of the same shape has been seen, a run is guessed to take this long (the presets' measured times:
# docs/training.md, "Presets"); only for waiting estimates.
GUESS_RUN_S = 60.0
OVERHEAD_GUESS_S = 5.0  # seconds a run spends outside its training steps (data, model, last measure, saving)


def shape(spec: dict) -> tuple:
    """What a run's pace per step depends on (not its seed, name, learning rate or number of steps)."""
    return tuple(spec.get(key) for key in ("task", "family", "embedding", "hidden", "heads", "layers", "batch_size"))


def steps_to_run(spec: dict) -> int:
    """Steps a run of ``spec`` takes: its ``steps``, or one pass for a family that counts (bag of words)."""
    from seqviz import families

    try:
        counts = families.get(str(spec.get("family"))).counts
    except (KeyError, ValueError):
        counts = False
    return 1 if counts else max(1, int(spec.get("steps") or 1))


@dataclass(frozen=True)
class Training:
    spec: dict  # its RunSpec's fields
    step: int
    steps: int
    trained_s: float  # seconds of training so far
    started_ago_s: float  # seconds since it left the queue


class Paces:
    """Seconds per step by run shape, and seconds outside training, from runs that ended."""

    def __init__(self, ended: list[tuple[dict, float, float]]):
        self.per_step: dict[tuple, list[float]] = {}
        for spec, per_step, _overhead in ended:
            self.per_step.setdefault(shape(spec), []).append(per_step)
        overheads = [overhead for _spec, _per_step, overhead in ended]
        self.overhead = sum(overheads) / len(overheads) if overheads else OVERHEAD_GUESS_S

    def lately(self, spec: dict, recent: int = 5) -> tuple[float, int] | None:
        """(seconds of training, runs it rests on) that ``spec`` is expected to take, from the ``recent`` last runs
        of its shape that ended (the caller's order: newest first), so it follows this server's load now; None
        before any has ended. What /train promises before Start."""
        paces = self.per_step.get(shape(spec), [])[:recent]
        if not paces:
            return None
        return sum(paces) / len(paces) * steps_to_run(spec), len(paces)

    def run_s(self, spec: dict, training: list[Training] = ()) -> float:
        """Seconds ``spec`` is expected to take from leaving the queue to its end."""
        paces = list(self.per_step.get(shape(spec), ()))
        if not paces:  # none of this shape has ended yet: the pace of those training now
            paces = [t.trained_s / t.step for t in training if t.step >= 5 and shape(t.spec) == shape(spec)]
        steps = steps_to_run(spec)
        trained = sum(paces) / len(paces) * steps if paces else GUESS_RUN_S
        return min(trained, limits.TRAIN_MAX_SECONDS) + self.overhead


def expected_starts(training: list[Training], queued: list[dict], slots: int, paces: Paces,
                    extra: int = 0) -> list[float]:
    """Seconds from now until each queued run (in order), and ``extra`` more like the last, is expected to begin,
    with ``slots`` runs training at once."""
    slots = max(1, slots)
    free = []
    for run in training:
        if run.step >= 10:  # its own pace so far, and half a typical overhead for its last measure and saving
            left = min(run.trained_s / run.step * (run.steps - run.step),
                       limits.TRAIN_MAX_SECONDS - run.trained_s) + paces.overhead / 2
        else:
            left = paces.run_s(run.spec, training) - run.started_ago_s
        free.append(max(0.0, left))
    free = sorted(free)[:slots] + [0.0] * max(0, slots - len(free))
    starts = []
    specs = list(queued) + [queued[-1] if queued else None] * extra
    for spec in specs:
        at = min(free)
        starts.append(at)
        free[free.index(at)] = at + (paces.run_s(spec, training) if spec is not None else GUESS_RUN_S)
    return starts


# A waiting run's expected start moves at most this factor a second against the one last shown (1.12 a second: at most
# 1.25x between two refreshes of /train, 2 s apart, and 1.76x over 5 s), so a new estimate a run's pace makes
# (a run ahead that slowed, one that reached its tenth step) reaches the page over a few refreshes, not at once.
STEADY_PER_S = 1.12
STEADY_FROM_S = 5.0  # a wait shown of less than this follows the estimate at once (seconds are not worth smoothing)


def steady(shown: tuple[float, float] | None, estimate: float, now: float) -> float:
    """The expected start to show (time.time() seconds) for a new ``estimate``, given the one ``shown`` last:
    (when it was shown, the start it showed), or None. The wait left is kept within STEADY_PER_S a second of the
    wait the last one leaves now."""
    if shown is None:
        return estimate
    at, start = shown
    left_then = start - now  # the wait the last shown start leaves now
    if left_then < STEADY_FROM_S:
        return estimate
    factor = STEADY_PER_S ** max(0.0, now - at)  # per second since, however often it is read
    left = min(max(estimate - now, left_then / factor), left_then * factor)
    return now + left
