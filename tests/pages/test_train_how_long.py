"""/train says how long a run like the form's trains on this server now, from the runs of its shape that ended
here (a class's load shows in it), and promises nothing before one has: no quiet machine's figure."""

import re
from pathlib import Path

from conftest import all_text
from streamlit.testing.v1 import AppTest

from seqviz import limits
from seqviz.runs import RunSpec
from seqviz.store import database, labs, runs

PAGE = "app_pages/train.py"
APP = str(Path(__file__).resolve().parents[2] / "app.py")
BATCH = 40  # a batch size no other test trains with: the shape is this test's own in the run's shared store


def how_long(at: AppTest) -> str:
    found = [line.replace("**", "") for line in all_text(at).splitlines() if line.startswith("**How long:**")]
    assert len(found) == 1, all_text(at)
    return found[0]


def test_the_form_says_how_long_runs_of_its_shape_took_here_lately():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page(PAGE).run()
    at.number_input(key="tr_batch_size").set_value(BATCH).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "no run of this shape has ended on this server yet" in how_long(at)
    assert "half a minute" not in all_text(at)  # the preset promises no quiet machine's time

    values = {field: at.number_input(key=f"tr_{field}").value
              for field in ("embedding", "hidden", "heads", "layers", "steps", "lr", "seed")}
    spec = RunSpec(task=at.selectbox(key="tr_task").value, family=at.selectbox(key="tr_family").value,
                   batch_size=BATCH, **values)
    db = database()
    lab_id = labs.open_lab(db, None).id
    for step, seconds in ((100, 60.0), (200, 84.0)):  # 0.6 and 0.42 s a step on a loaded server
        run_id = runs.create(db, lab_id, spec)
        runs.end(db, run_id, "finished", step=step, train_seconds=seconds)
    at.run()
    expected = (0.6 + 0.42) / 2 * spec.steps  # 204 s for the preset's 400 steps: "about 3 min"
    text = how_long(at)
    assert re.search(rf"about {expected / 60:.0f} min of training on this server now", text), text
    assert "the last 2 runs of this shape" in text
    assert expected > limits.TRAIN_MAX_SECONDS  # so the page says where such a run would stop
    assert f"reach the {limits.TRAIN_MAX_SECONDS:.0f} s limit and stop there" in text
