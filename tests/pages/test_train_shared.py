"""/train when a class asks for the same run: it trains once for all who asked, each sees that and gets their own
model; one who stops following leaves it to the others; one who asks after it finished has the model at once and
its training replayed at the pace it trained, or skipped.

Each AppTest session here is a browser of its own (a lab of its own). The runs train on the app's own cluster.
"""

from conftest import all_text, set_sentence
from test_train_page import ended, has_button, lab_models, open_train, press, settle, step, tiny, training

LONG = 3000


def caption_text(at) -> str:
    return " ".join(str(c.value) for c in at.main.caption)


def test_a_run_asked_for_twice_trains_once_and_the_one_who_stops_following_leaves_it_to_the_other():
    first = tiny(open_train(), steps=LONG, seed=71)
    press(first, "Start training")
    assert any("Your run is queued" in t.value for t in first.toast)  # said where the visitor looks
    settle(first, training)
    second = tiny(open_train(), steps=LONG, seed=71)
    press(second, "Start training")
    assert any("training already for 1 other visitor: you follow" in t.value for t in second.toast)
    settle(second, lambda a: has_button(a, "Stop following"))
    assert "Trained once for 2 visitors" in caption_text(second), all_text(second)
    settle(first, lambda a: has_button(a, "Stop following"))
    assert "you and 1 other visitor asked for these exact settings" in caption_text(first)
    press(second, "Stop following")
    settle(second, lambda a: "You stopped following this run" in caption_text(a))
    assert not has_button(second, "Stop following") and not has_button(second, "Stop training")
    at_leaving = step(settle(first, lambda a: step(a) is not None))
    settle(first, lambda a: training(a) and (step(a) or 0) > (at_leaving or 0))  # it trains on for the other
    assert "Trained once" not in caption_text(first)  # it is only theirs now
    press(first, "Stop training")
    settle(first, ended)
    assert len(lab_models(first)) == 1 and lab_models(second) == []


def test_a_run_asked_for_after_it_finished_is_there_at_once_and_its_training_replays_or_is_skipped():
    trained = tiny(open_train(), steps=60, seed=72)
    press(trained, "Start training")
    settle(trained, ended)
    later = tiny(open_train(), steps=60, seed=72)
    press(later, "Start training")
    assert "had been trained here already" in caption_text(later), all_text(later)
    assert [m.fingerprint for m in lab_models(later)] == [m.fingerprint for m in lab_models(trained)]
    replay = [p.text for p in later.main.get("progress") if "Replaying its training" in p.text]
    assert replay and has_button(later, "Skip to the end"), all_text(later)
    press(later, "Skip to the end")
    assert not has_button(later, "Skip to the end") and has_button(later, "Replay its training")
    assert any(s.value.startswith("Finished after 60 steps") for s in later.main.success), all_text(later)


def test_a_shared_run_never_shows_the_sentence_another_visitor_typed():
    first = tiny(open_train(), task="emails", family="lstm", steps=40, seed=73)
    set_sentence(first, "my neighbour's wifi password is hunter2")
    press(first, "Start training")
    settle(first, ended)
    assert "Watch it learn" in all_text(first)  # their own sentence, read by their own run
    other = tiny(open_train(), task="emails", family="lstm", steps=40, seed=73)
    press(other, "Start training")
    assert "had been trained here already" in caption_text(other), all_text(other)
    press(other, "Skip to the end")
    assert "that sentence is theirs" in caption_text(other) and "Watch it learn" not in all_text(other)
