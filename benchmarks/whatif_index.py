"""/what-if's neighbour index, measured: for every shipped translator and both sides (encoder states of the
source words, decoder states of the output steps), the time to build the index the page builds once per model,
side and server, the states it holds and its memory, and the reading of the training sentences that comes first
(once per server).

    python -m benchmarks.whatif_index            # 3 builds of each index, the median reported
    python -m benchmarks.whatif_index --repeats 1

Memory is the index's own (``NeighbourIndex.nbytes``: N x D float32 vectors, and a sentence and position per
state), which seqviz.limits bounds; the process's peak resident memory is printed beside it, as a rough figure for
torch and the model. Timings are on this machine, which may be shared: the load average is printed with them.
Nothing here is asserted: docs/measured.md (/what-if) quotes a run.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time

from benchmarks.report import table

TRANSLATORS = ("plain", "additive", "dot", "transformer-translator")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports kB


def measure(repeats: int = 3) -> tuple[float, list[dict]]:
    """(seconds to read the training sentences, one row per model and side)."""
    from seqviz import zoo
    from seqviz.analysis.neighbours import SIDES, build_index, training_pairs
    from seqviz.runtime import configure_torch

    configure_torch()  # one thread, as the app's server runs a page
    began = time.perf_counter()
    pairs = training_pairs()
    reading = time.perf_counter() - began
    rows = []
    for name in (n for n in TRANSLATORS if n in zoo.available()):
        checkpoint = zoo.load(name)
        for side in SIDES:
            times, index = [], None
            for _ in range(repeats):
                began = time.perf_counter()
                index = build_index(checkpoint.model, checkpoint.vocabularies, pairs, side)
                times.append(time.perf_counter() - began)
            rows.append({"model": name, "side": side, "states": len(index), "numbers a state": index.vectors.size(1),
                         "sentences": len(index.pairs), "build s (median)": statistics.median(times),
                         "build s (max)": max(times), "index MiB": index.nbytes / 2**20,
                         "process peak MiB": _peak_rss_mb()})
    return reading, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="builds of each index (the median is reported)")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    reading, rows = measure(args.repeats)
    print(f"Training sentences read in {reading:.1f} s (once per server); load average {load:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after; {os.cpu_count()} cores.\n")
    print(table(rows))


if __name__ == "__main__":
    main()
