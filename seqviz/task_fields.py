"""Each task's model fields (vocabulary sizes, labels) at the shipped data seed, without generating its data.

Building a task generates its data from the seed: seconds of Python per task (the translation pairs most). Counting
a run's parameters needs only the fields: /train's form does it for every spec a visitor sets, a press of Start
does it again, and ``seqviz.runs``' presets do it as the module is imported. So the fields ship in
``assets/tasks.json``, beside the code version of what made them:

    {"code": sha256 of seqviz/tasks/, seqviz/data/ and seqviz/text.py, "fields": {task name: its model fields}}

A file of another code version, or one that cannot be read, is not used: the task is then built, as before, and
tests/unit/test_task_fields.py fails until ``python -m seqviz.studies`` writes the file again.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from seqviz.run_identity import sources_version

PATH = Path(__file__).resolve().parents[1] / "assets" / "tasks.json"
DATA_CODE = ("tasks", "data", "text.py")  # under seqviz/: what a task's vocabularies and labels follow from


def shipped(name: str) -> dict | None:
    """Task ``name``'s model fields at the shipped seed, from assets/tasks.json; None where the file cannot say."""
    fields = _read(PATH).get(name)
    return dict(fields) if fields is not None else None


@functools.cache
def _read(path: Path) -> dict[str, dict]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(document, dict) or document.get("code") != sources_version(DATA_CODE):
        return {}
    tasks = document.get("fields")
    if not isinstance(tasks, dict):
        return {}
    return {name: fields for name, raw in tasks.items() if (fields := _valid(raw)) is not None}


def _valid(raw) -> dict | None:
    """The fields as a task's ``model_fields()`` gives them (labels a tuple), or None if they are not such."""
    if not isinstance(raw, dict) or not raw:
        return None
    fields = {}
    for key, value in raw.items():
        if key.endswith("vocab_size") and type(value) is int and value > 0:
            fields[key] = value
        elif key == "labels" and isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            fields[key] = tuple(value)
        else:
            return None
    return fields


def measure() -> dict[str, dict]:
    """Every task's model fields, each task built (its data generated) at the shipped seed."""
    from seqviz.tasks import TASKS, make_task

    return {name: make_task(name).model_fields() for name in TASKS}


def write(path: Path = PATH) -> Path:
    """Write ``measure()``'s fields with the data code's version (``python -m seqviz.studies`` calls it)."""
    document = {"code": sources_version(DATA_CODE), "fields": measure()}
    path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    _read.cache_clear()
    return path
