"""A lab's models in the store (seqviz.store.models), on SQLite and PostgreSQL: every file checked before it is
kept, one model per file, names unique in the lab and never a shipped one's, the lab's limits at their edges, names
kept exactly as text, and no lab seeing another's models."""

from pathlib import Path

import pytest
from checkpoint_files import hostile_files, rewrite_meta
from store_fixtures import bow, count, in_threads, meeting_at_first_write, named

from seqviz import limits
from seqviz.checkpoints import CheckpointError, fingerprint
from seqviz.registry import clean_name
from seqviz.store import labs, models


def _lab(db):
    return labs.open_lab(db, None).id


def test_a_checked_file_is_kept_with_what_pickers_show_and_its_exact_bytes(db):
    lab = _lab(db)
    data = named("my model")
    model, new = models.add(db, lab, data, filename="ignored.safetensors", origin="trained here")
    assert new
    assert (model.fingerprint, model.name, model.family, model.task, model.origin, model.size) == (
        fingerprint(data), "my model", "bow", "emails", "trained here", len(data))
    assert models.listed(db, lab) == [model]
    assert models.data(db, lab, model.fingerprint) == data
    assert isinstance(models.model_id(db, lab, model.fingerprint), int)
    assert models.usage(db, lab) == (1, len(data))
    models.remove(db, lab, model.fingerprint)
    assert models.listed(db, lab) == [] and models.usage(db, lab) == (0, 0) and count(db, "models") == 0


def test_a_file_without_a_name_is_named_after_its_file_name(db):
    data = rewrite_meta(bow(), lambda document: document.pop("name"))
    model, _ = models.add(db, _lab(db), data, filename="uploads/My Email Model.safetensors")
    assert model.name == "My Email Model"


HOSTILE = sorted(hostile_files(bow(), marker=Path("/nonexistent")))


@pytest.mark.parametrize("kind", HOSTILE)
def test_a_damaged_foreign_or_wrong_task_file_is_refused_and_nothing_is_written(db, kind, tmp_path):
    marker = tmp_path / "unpickled"
    data = hostile_files(bow(), marker)[kind]
    lab = _lab(db)
    models.add(db, lab, named("kept before"))
    with pytest.raises(CheckpointError) as refused:
        models.add(db, lab, data, filename=kind)
    assert str(refused.value).strip()
    assert [m.name for m in models.listed(db, lab)] == ["kept before"] and count(db, "models") == 1
    assert models.data(db, lab, fingerprint(data)) is None
    assert not marker.exists()


def test_the_same_file_twice_is_one_model_and_each_lab_has_its_own(db):
    first, second = _lab(db), _lab(db)
    kept, new = models.add(db, first, named("twice"))
    again, new_again = models.add(db, first, named("twice"), filename="another name", origin="trained here")
    assert new and not new_again and again == kept
    assert models.add(db, second, named("twice"))[1]
    assert [m.name for m in models.listed(db, first)] == ["twice"] == [m.name for m in models.listed(db, second)]
    assert count(db, "models") == 2


def test_names_are_unique_in_the_lab_and_never_a_shipped_ones(db):
    lab, other = _lab(db), _lab(db)
    names = [models.add(db, lab, named("twin", seed=n))[0].name for n in range(3)]  # three files, one name
    assert names == ["twin", "twin (2)", "twin (3)"]
    assert models.add(db, other, named("twin"))[0].name == "twin"  # another lab's names are its own
    shipped = {"bow", "lstm", "twin (4)"}
    assert models.add(db, lab, bow(), taken=shipped)[0].name == "bow (2)"
    assert models.add(db, lab, named("twin", seed=8), taken=shipped)[0].name == "twin (5)"
    assert models.add(db, lab, named("lstm"), taken=shipped)[0].name == "lstm (2)"
    listed = [m.name for m in models.listed(db, lab)]
    assert len(listed) == len(set(listed)) == 6 and not set(listed) & shipped


NAMES = ["'); DROP TABLE models;--", "<script>alert('x')</script>", 'Robert"); DELETE FROM labs; --',
         "a %s %% ? :name $1 \\x00 name", "<img src=x onerror=alert(1)>&amp;", "模型 ✓ ☃"]


@pytest.mark.parametrize("name", NAMES)
def test_names_with_sql_and_html_characters_are_kept_exactly_as_text(db, name):
    lab, other = _lab(db), _lab(db)
    models.add(db, other, named("other lab's"))
    model, _ = models.add(db, lab, named(name))
    assert model.name == clean_name(name) and model.name.strip(" .-_")
    assert [m.name for m in models.listed(db, lab)] == [clean_name(name)]
    assert "DROP" not in name or "DROP TABLE models;" in model.name
    assert "<script>" not in name or model.name == "<script>alert('x')</script>"
    assert count(db, "models") == 2 and count(db, "labs") == 2
    assert [m.name for m in models.listed(db, other)] == ["other lab's"]


def test_another_lab_never_sees_a_labs_models(db):
    mine, theirs = _lab(db), _lab(db)
    model, _ = models.add(db, mine, named("mine"))
    assert models.listed(db, theirs) == [] and models.usage(db, theirs) == (0, 0)
    assert models.data(db, theirs, model.fingerprint) is None
    assert models.model_id(db, theirs, model.fingerprint) is None
    models.remove(db, theirs, model.fingerprint)  # not theirs to remove
    assert models.listed(db, mine) == [model]


def test_max_lab_models_exactly_at_the_limit_and_one_over(db, monkeypatch):
    monkeypatch.setattr(limits, "MAX_LAB_MODELS", 3)
    lab = _lab(db)
    for n in range(3):
        assert models.add(db, lab, named(f"m{n}"))[1]
    with pytest.raises(CheckpointError, match="already has 3 models"):
        models.add(db, lab, named("one over"))
    assert models.usage(db, lab)[0] == 3 and count(db, "models") == 3
    assert not models.add(db, lab, named("m1"))[1]  # a file it has already: no new model, no refusal
    assert models.add(db, _lab(db), named("one over"))[1]  # another lab has room


def test_max_lab_mb_exactly_at_the_limit_and_one_byte_over(db, monkeypatch):
    lab, other = _lab(db), _lab(db)
    first, second = named("first"), named("second")
    monkeypatch.setattr(limits, "MAX_LAB_MB", (len(first) + len(second)) / 2**20)
    models.add(db, lab, first)
    models.add(db, lab, second)
    assert models.usage(db, lab) == (2, len(first) + len(second))
    with pytest.raises(CheckpointError, match="more than"):
        models.add(db, lab, named("x"))
    monkeypatch.setattr(limits, "MAX_LAB_MB", (len(first) + len(second) - 1) / 2**20)
    models.add(db, other, first)
    with pytest.raises(CheckpointError, match="more than"):
        models.add(db, other, second)
    assert models.usage(db, other) == (1, len(first))


def test_within_limits_false_goes_past_them(db, monkeypatch):
    monkeypatch.setattr(limits, "MAX_LAB_MODELS", 1)
    monkeypatch.setattr(limits, "MAX_LAB_MB", len(named("a")) / 2**20)
    lab = _lab(db)
    models.add(db, lab, named("a"))
    for name in ("b", "c"):
        with pytest.raises(CheckpointError):
            models.add(db, lab, named(name))
        assert models.add(db, lab, named(name), origin="trained here", within_limits=False)[1]
    assert models.usage(db, lab)[0] == 3


def test_two_tabs_adding_the_same_file_at_once_keep_one_model(db):
    lab = _lab(db)
    with meeting_at_first_write(db):
        results = in_threads(lambda: models.add(db, lab, named("both tabs")),
                             lambda: models.add(db, lab, named("both tabs")))
    assert all(isinstance(result, tuple) for result in results), results
    assert sorted(new for _, new in results) == [False, True]
    assert count(db, "models") == 1


def test_two_files_of_one_name_added_at_once_get_two_names(db):
    lab = _lab(db)
    with meeting_at_first_write(db):
        results = in_threads(lambda: models.add(db, lab, named("same")), lambda: models.add(db, lab, named("same ")))
    assert all(isinstance(result, tuple) for result in results), results
    assert sorted(m.name for m in models.listed(db, lab)) == ["same", "same (2)"]


def test_adds_at_once_never_take_a_lab_past_its_limit(db, monkeypatch):
    monkeypatch.setattr(limits, "MAX_LAB_MODELS", 1)
    lab = _lab(db)
    with meeting_at_first_write(db):
        results = in_threads(lambda: models.add(db, lab, named("one")), lambda: models.add(db, lab, named("two")))
    assert sorted(type(result).__name__ for result in results) == ["CheckpointError", "tuple"], results
    assert models.usage(db, lab)[0] == 1


def test_a_file_for_a_lab_that_is_gone_is_refused_in_words(db):
    lab = _lab(db)
    labs.forget(db, lab)
    with pytest.raises(CheckpointError, match="no longer in the store"):
        models.add(db, lab, named("too late"), within_limits=False)
    assert count(db, "models") == 0
