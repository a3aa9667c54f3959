"""assets/tasks.json: each task's model fields at the shipped seed, so that counting a run's parameters (the presets
as seqviz.runs is imported, /train's form, a press of Start) generates no data."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from seqviz import task_fields
from seqviz.run_identity import sources_version
from seqviz.tasks import TASKS

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_fields_are_those_of_the_tasks_built_now():
    """Fails when the data code changed and the file was not written again: run ``python -m seqviz.studies``."""
    assert task_fields._read(task_fields.PATH), "assets/tasks.json is not read: run `python -m seqviz.studies`"
    assert {name: task_fields.shipped(name) for name in TASKS} == task_fields.measure()


def test_importing_the_runs_and_counting_a_spec_s_parameters_builds_no_task_and_imports_no_dynamo():
    """What /train's first form costs a fresh server: no task's data generated, and no torch._dynamo imported (a
    skeleton's weights are left unfilled: seqviz.models.common.skeleton), each of them seconds."""
    script = (
        "import sys\n"
        "import seqviz.runs as r\n"
        "n = r.RunSpec(family='transformer-seq2seq', task='translation', embedding=64, hidden=128).num_parameters()\n"
        "m = r.RunSpec(family='lstm', task='emails', embedding=16, hidden=32).num_parameters()\n"
        "print(len(r._TASKS), len(r.PRESETS), n, m, int('torch._dynamo' in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    built, presets, transformer, lstm, dynamo = map(int, out.stdout.split())
    assert built == 0 and presets > 0 and transformer > lstm > 0 and not dynamo, out.stdout


def test_a_spec_counts_the_same_parameters_from_the_file_as_from_the_task(monkeypatch):
    from seqviz import runs

    spec = runs.RunSpec(family="gru", task="emails", embedding=16, hidden=32)
    from_file = spec.num_parameters()
    monkeypatch.setattr(task_fields, "shipped", lambda _name: None)
    assert spec.num_parameters() == from_file


def _write(path: Path, document) -> Path:
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


@pytest.mark.parametrize("document", [
    "{not json",
    [],
    {"fields": {"emails": {"vocab_size": 162}}},  # no code version
    {"code": "0" * 64, "fields": {"emails": {"vocab_size": 162}}},  # another code's
])
def test_a_file_that_cannot_say_is_not_read(tmp_path, document):
    assert task_fields._read(_write(tmp_path / "tasks.json", document)) == {}


def test_a_missing_file_is_not_read(tmp_path):
    assert task_fields._read(tmp_path / "absent.json") == {}


@pytest.mark.parametrize("fields", [
    {},
    {"vocab_size": 0},
    {"vocab_size": -3},
    {"vocab_size": 2.5},
    {"vocab_size": True},
    {"vocab_size": "162"},
    {"vocab_size": 162, "labels": []},
    {"vocab_size": 162, "labels": "billing"},
    {"vocab_size": 162, "labels": ["billing", 3]},
    {"vocab_size": 162, "hidden": 64},
    ["vocab_size", 162],
])
def test_a_task_whose_fields_are_not_such_is_left_out(tmp_path, fields):
    document = {"code": sources_version(task_fields.DATA_CODE),
                "fields": {"emails": fields, "translation": {"src_vocab_size": 57, "tgt_vocab_size": 73}}}
    read = task_fields._read(_write(tmp_path / "tasks.json", document))
    assert read == {"translation": {"src_vocab_size": 57, "tgt_vocab_size": 73}}


def test_labels_are_read_as_a_tuple_in_their_order(tmp_path):
    document = {"code": sources_version(task_fields.DATA_CODE),
                "fields": {"emails": {"vocab_size": 9, "labels": ["b", "a"]}}}
    assert task_fields._read(_write(tmp_path / "tasks.json", document)) == {
        "emails": {"vocab_size": 9, "labels": ("b", "a")}}
