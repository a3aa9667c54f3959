"""The command line's run of your own: `python -m seqviz train --task ... --out FILE.safetensors`.

A tiny run writes the one-file checkpoint the app's upload takes; bad options stop with a message and exit 2.
"""

import time

import pytest

from seqviz import checkpoints, limits
from seqviz.__main__ import main
from seqviz.store import Database, labs
from seqviz.store import models as stored

NO_OUT = "(no --out)"


def run(argv):
    """main(argv) as the shell sees it: the exit code, also when argparse exits."""
    try:
        return main(argv)
    except SystemExit as exit_:
        return exit_.code


def test_a_tiny_run_writes_a_checkpoint_the_app_takes(tmp_path, capsys):
    out = tmp_path / "tiny.safetensors"
    started = time.perf_counter()
    code = run(["train", "--task", "emails", "--family", "lstm", "--embedding", "8", "--hidden", "8", "--steps", "4",
                "--lr", "0.01", "--batch-size", "16", "--seed", "3",
                "--name", "tiny from the shell", "--out", str(out)])
    wall = time.perf_counter() - started
    assert code == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == str(out)
    assert "step 1/4 loss" in captured.err and "step 4/4 loss" in captured.err and "held-out: test" in captured.err

    checkpoint = checkpoints.load(out)
    meta = checkpoint.meta
    assert checkpoint.family == "lstm" and checkpoint.task == "emails"
    assert meta["name"] == "tiny from the shell" and meta["seed"] == 3 and meta["steps"] == 4
    assert meta["train"]["steps"] == 4 and meta["train"]["batch_size"] == 16 and meta["train"]["lr"] == 0.01
    assert meta["spec"]["hidden"] == 8 and isinstance(meta["train_seconds"], float)
    # the seconds spent training (rounded to 0.01 s, so 4 tiny steps may read 0): a duration within the command's
    # own time, not a clock reading
    assert 0 <= meta["train_seconds"] <= wall, (meta["train_seconds"], wall)
    assert {"test_accuracy", "twins_accuracy"} <= set(meta["metrics"])
    assert set(checkpoint.vocabularies) == {"tokens"}

    db = Database(f"sqlite:///{tmp_path / 'store.db'}")  # the app's upload, into a lab of a store of its own
    model, new = stored.add(db, labs.open_lab(db, None).id, out.read_bytes(), filename=out.name)
    assert new and model.name == "tiny from the shell" and model.task == "emails"
    db.dispose()


def test_a_translator_checkpoint_is_a_translator(tmp_path, capsys):
    out = tmp_path / "t.safetensors"
    assert run(["train", "--task", "translation", "--family", "dot", "--embedding", "8", "--hidden", "8",
                "--heads", "2", "--steps", "2", "--batch-size", "8", "--out", str(out)]) == 0
    assert "--heads does not apply to dot; ignored" in capsys.readouterr().err
    checkpoint = stored.checked(out.read_bytes())  # what the app's upload checks
    assert checkpoint.translates and checkpoint.family == "dot"
    assert "exact_match_le30" in checkpoint.metrics


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--task", "poetry", "--family", "lstm", "--steps", "3"], "--task must be one of emails, memory, translation"),
        (["--task", "emails", "--family", "dot", "--steps", "3"], "rnn, gru, lstm, attention-lstm, transformer, bow"),
        (["--task", "memory", "--steps", "3"], "needs --family, one of rnn, gru, lstm"),
        (["--task", "emails", "--family", "lstm"], f"--steps N: optimisation steps, 1 to {limits.TRAIN_MAX_STEPS}"),
        (["--task", "emails", "--family", "lstm", "--hidden", "999", "--steps", "3"],
         f"from {limits.TRAIN_WIDTH_RANGE[0]} to {limits.TRAIN_WIDTH_RANGE[1]} (seqviz.limits.TRAIN_WIDTH_RANGE)"),
        (["--task", "emails", "--family", "lstm", "--steps", str(limits.TRAIN_MAX_STEPS + 1)], "TRAIN_MAX_STEPS"),
        (["--task", "emails", "--family", "lstm", "--steps", "3", "--batch-size", "0"],
         "--batch-size from 1 to 256"),
        (["--task", "emails", "--family", "lstm", "--steps", "3", "--lr", "5"], "TRAIN_LR_RANGE"),
        (["--task", "emails", "--family", "transformer", "--embedding", "30", "--heads", "4", "--steps", "3"],
         "must divide by heads"),
        (["--task", "emails", "--family", "lstm", "--steps", "3", "--out", "model.pt"], "ending in .safetensors"),
        (["--task", "emails", "--family", "lstm", "--steps", "3", NO_OUT], "--task needs --out"),
        (["lstm", "--task", "emails", "--family", "lstm", "--steps", "3"], "not both"),
        (["--all", "--task", "emails", "--family", "lstm", "--steps", "3"], "not both"),
        (["--family", "lstm", "--steps", "3"], "add --task"),
        (["--out", "x.safetensors"], "add --task"),
        (["no-such-model"], "no shipped model called no-such-model"),
        (["--task", "emails", "--family", "lstm", "--steps", "three"], "invalid int value"),
    ],
)
def test_bad_options_say_why_and_exit_2(argv, says, tmp_path, capsys):
    if "--task" in argv and "--out" not in argv and NO_OUT not in argv:
        argv = [*argv, "--out", str(tmp_path / "m.safetensors")]
    argv = [a for a in argv if a != NO_OUT]
    assert run(["train", *argv]) == 2
    err = capsys.readouterr().err
    assert says in err
    assert "Traceback" not in err
    assert not list(tmp_path.iterdir()), "nothing is written when the options are refused"


def test_a_run_too_large_names_the_bound(tmp_path, capsys):
    # 600,057 numbers: 57 past the bound (tests/unit/test_runs.py has the one just inside)
    argv = ["train", "--task", "translation", "--family", "transformer-seq2seq", "--embedding", "200", "--hidden",
            "92", "--heads", "4", "--layers", "1", "--steps", "3", "--out", str(tmp_path / "big.safetensors")]
    assert run(argv) == 2
    assert f"600,057 numbers, more than the {limits.TRAIN_MAX_PARAMETERS:,}" in capsys.readouterr().err


def test_the_zoo_forms_are_still_there(capsys):
    assert run(["train", "--help"]) == 0
    text = capsys.readouterr().out
    assert "train --all" in text and "train NAME" in text and "--out FILE.safetensors" in text
    assert run(["train"]) == 2  # no names, no --all, no --task
    assert "name the models to train" in capsys.readouterr().err
