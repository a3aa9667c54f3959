"""When two runs are the same run: the identity key that lets a class train one model once, not thirty times.

The project trains deterministically (seqviz.runtime.configure_torch: one thread, deterministic algorithms; every
random draw seeded by the spec), so a run is fixed by:

- its spec (seqviz.runs.RunSpec) but its ``name``, which only labels it;
- the code on the training path (the loop, the driver, the models, the data, the tasks), as source bytes;
- what can change the arithmetic: torch's version and the CPU instruction set its kernels pick
  (``torch.backends.cpu.get_cpu_capability()``: AVX2 and AVX-512 kernels may round differently).

The web server computes the key when a run is submitted; the worker that trains it computes it again in its own
process (seqviz.worker), and where the two differ (a cluster of other machines) the run is recorded under the
worker's key, so a later run is matched only with one trained where it would train.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import asdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
TRAINING_PATH = ("train.py", "driver.py", "runs.py", "tasks", "families.py", "checkpoints", "runtime.py",
                 "models", "data")  # under seqviz/: what a run's weights follow from


def sources_version(names: tuple[str, ...]) -> str:
    """sha256 of these source files under seqviz/ (a name not ending in .py: a package's files), in a fixed
    order."""
    digest = hashlib.sha256()
    for name in names:
        path = PACKAGE / name
        for file in [path] if name.endswith(".py") else sorted(path.rglob("*.py")):  # a file, or a package's files
            digest.update(str(file.relative_to(PACKAGE)).encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def code_version() -> str:
    """sha256 of the training path's source files, in a fixed order (once per process)."""
    return sources_version(TRAINING_PATH)


@functools.cache
def arithmetic() -> dict[str, str]:
    """What in this process can change a run's numbers beside its spec and the code."""
    import torch

    return {"torch": torch.__version__, "cpu": torch.backends.cpu.get_cpu_capability()}


def identity_key(spec) -> str:
    """The key identical runs share (sha256 hex): the same spec but its name, code and arithmetic."""
    fields = asdict(spec)
    fields.pop("name", None)
    data = {"spec": fields, "code": code_version(), **arithmetic()}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
