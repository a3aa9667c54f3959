"""Held-out studies shipped beside the zoo's models (seqviz.studies): every shipped model a study view fits carries
its studies, measured by the code as it is now, and they are what a live measurement gives."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest

from seqviz import checkpoints, registry, studies

SHIPPED, _ = registry.shipped()
STUDY_VIEWS = studies.study_views()


def _fitting(name: str) -> set[str]:
    ref = SHIPPED[name].ref
    return {view.name for view in STUDY_VIEWS if view.fits(ref.family, ref.task)}


@pytest.mark.parametrize("name", [name for name in SHIPPED if _fitting(name)])
def test_a_shipped_model_carries_its_studies_measured_by_the_code_as_it_is(name):
    shipped = SHIPPED[name]
    path = studies.path_for(shipped.path)
    assert path.exists(), f"no {path.name}: run `python -m seqviz.studies {name}`"
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["fingerprint"] == shipped.ref.fingerprint, f"{path.name} is another checkpoint's"
    assert document["code"] == studies.code_version(), (
        f"{path.name} was measured by other code: run `python -m seqviz.studies {name}` again")
    assert set(studies.read(shipped.path, shipped.ref.fingerprint)) == _fitting(name)


def test_a_shipped_study_is_what_a_live_measurement_gives():
    """The smallest study (the attention-pooled email classifier's): measured here again, the same numbers (to the
    rounding of another CPU's arithmetic)."""
    shipped = SHIPPED["attention-lstm"]
    kept = studies.read(shipped.path, shipped.ref.fingerprint)
    live = studies.measure(checkpoints.load(shipped.path))
    assert set(kept) == set(live)
    flat_kept, flat_live = _numbers(studies.encode(kept)), _numbers(studies.encode(live))
    assert len(flat_kept) == len(flat_live) > 10
    np.testing.assert_allclose(flat_kept, flat_live, rtol=1e-4, atol=1e-6)


def _numbers(value) -> list[float]:
    if isinstance(value, dict):
        return [n for key in sorted(value) for n in _numbers(value[key])]
    if isinstance(value, list):
        return [n for item in value for n in _numbers(item)]
    return [float(value)] if isinstance(value, int | float) and not isinstance(value, bool) else []


def test_a_study_round_trips_through_json():
    from seqviz.analysis.explain.ablation import PermutationTest

    fields = {f: 0.5 for f in PermutationTest.__dataclass_fields__}
    study = {"taus": [0.25, np.float64(-0.5)], "pair": (1, "a"), "test": PermutationTest(**fields),
             "none": None, "array": np.arange(3)}
    back = studies.decode(json.loads(json.dumps(studies.encode(study))))
    assert back == {**study, "taus": [0.25, -0.5], "array": [0, 1, 2]}
    assert isinstance(back["test"], PermutationTest) and back["pair"] == (1, "a")


@dataclass(frozen=True)
class Elsewhere:
    x: int


def test_a_study_naming_a_class_outside_the_analysis_is_refused():
    with pytest.raises(ValueError, match=r"outside seqviz\.analysis"):
        studies.decode(studies.encode({"x": Elsewhere(1)}))
    with pytest.raises(ValueError):
        studies.decode({"__dataclass__": "os:system"})


def test_a_stale_or_broken_file_is_not_read(tmp_path):
    checkpoint = tmp_path / "m.safetensors"
    path = studies.path_for(checkpoint)
    path.write_text(json.dumps({"fingerprint": "f", "code": studies.code_version(), "studies": {"v": 1}}))
    assert studies.read(checkpoint, "f") == {"v": 1}
    assert studies.read(checkpoint, "another") == {}  # another checkpoint's
    path.write_text(json.dumps({"fingerprint": "f", "code": "old", "studies": {"v": 1}}))
    assert studies.read(checkpoint, "f") == {}  # other code's
    path.write_text("{not json")
    assert studies.read(checkpoint, "f") == {}
    path.unlink()
    assert studies.read(checkpoint, "f") == {}
