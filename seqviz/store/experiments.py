"""A class experiment: the teacher picks a task, a family and one setting to vary, with its values; each student
trains one value, and the board draws the class's curve as their runs land.

An :class:`Experiment` is a value kept as JSON in the class's row (``classes.experiment``). Every value it names
is a run a student may train here (checked against seqviz.limits through seqviz.runs.RunSpec), so a student's
/train form is never filled with settings it would refuse. :func:`next_value` hands a joining student the value
the fewest members hold or have posted. The chapter's two experiments ship ready-made (:data:`READY_MADE`).

Nothing here imports streamlit or torch (a RunSpec counts its parameters on torch's "meta" device only when
:meth:`Experiment.check` runs, which the page does once when a teacher sets an experiment).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from seqviz import limits

# The RunSpec fields an experiment may vary (the name is a label, not a setting).
SETTINGS = ("family", "hidden", "embedding", "layers", "heads", "steps", "lr", "batch_size", "seed")
LENGTH = "length"  # the board's x axis "source length": exact match per length bucket, one line per run


@dataclass(frozen=True)
class Experiment:
    title: str  # what the class is finding out, in words
    task: str  # a seqviz.runs.TASKS name
    family: str  # the family every run trains (the value itself, when ``setting`` is "family")
    setting: str  # one of SETTINGS
    values: tuple  # the setting's values, in the order the board lists them
    base: dict = field(default_factory=dict, hash=False)  # the run's other RunSpec fields (a preset's)
    preset: str | None = None  # the /train preset a student's form starts from (its "what to look for")
    x: str = ""  # what the board draws along x by default: the setting, or LENGTH
    measure: str = ""  # and up (a key of seqviz.store.classes.measures)

    def spec(self, value):
        """The run a student handed ``value`` trains (a seqviz.runs.RunSpec; ValueError if it may not)."""
        from seqviz.runs import RunSpec

        fields = {k: v for k, v in self.base.items() if k in RunSpec.__dataclass_fields__ and k != "name"}
        fields.update(task=self.task, family=self.family, name="")
        fields[self.setting] = value
        return RunSpec(**fields)

    def check(self) -> Experiment:
        """Itself, when every value is a run a student may train here; ValueError in words otherwise."""
        if self.setting not in SETTINGS:
            raise ValueError(f"the setting to vary must be one of {', '.join(SETTINGS)}")
        if not 1 <= len(self.values) <= limits.CLASS_MAX_VALUES:
            raise ValueError(f"an experiment varies its setting over 1 to {limits.CLASS_MAX_VALUES} values")
        if len(set(self.values)) != len(self.values):
            raise ValueError("each value may be listed once")
        for value in self.values:
            try:
                self.spec(value)
            except (TypeError, ValueError) as error:
                raise ValueError(f"{self.setting} {value!s:.20}: {error}") from None
        return self

    def to_dict(self) -> dict:
        return {**asdict(self), "values": list(self.values)}

    @classmethod
    def from_dict(cls, data) -> Experiment | None:
        """The experiment a class's row holds (None when there is none, or it is not one this code reads)."""
        if not isinstance(data, dict):
            return None
        try:
            fields = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
            return cls(**{**fields, "values": tuple(fields.get("values") or ())})
        except TypeError:
            return None

    def value_of(self, spec: dict):
        """The value a run's spec (a dict of RunSpec fields) takes of the setting, if it is one of the values."""
        value = spec.get(self.setting) if isinstance(spec, dict) else None
        return value if value in self.values else None


def _preset_fields(name: str) -> dict:
    from seqviz.runs import preset

    return {k: v for k, v in asdict(preset(name).spec).items() if k not in ("task", "family", "name")}


_BOTTLENECK_PRESET = "Bottleneck: plain encoder-decoder, hidden 16"
_ATTENTION_PRESET = "Same budget: attention LSTM translator"


def ready_made() -> dict[str, Experiment]:
    """The chapter's two experiments, by name. Hidden 128 is the largest plain translator of embedding 64 within
    TRAIN_MAX_PARAMETERS (hidden 256 would learn 2 million numbers)."""
    return {
        "bottleneck": Experiment(
            "The bottleneck: a plain encoder-decoder's hidden size against exact match by sentence length",
            "translation", "plain", "hidden", (8, 16, 32, 64, 96, 128), _preset_fields(_BOTTLENECK_PRESET),
            _BOTTLENECK_PRESET, x="hidden", measure="exact_match_le30"),  # (≥ 25 tokens: near 0 for every size)
        "attention": Experiment(
            "Attention against none: exact match by sentence length, on the same budget",
            "translation", "plain", "family", ("plain", "additive", "dot"), _preset_fields(_ATTENTION_PRESET),
            _ATTENTION_PRESET, x=LENGTH, measure="exact_match_le30"),
    }


def next_value(experiment: Experiment, held: list, posted: list):
    """The value a joining student gets: the one fewest members hold (``held``) or have posted runs of
    (``posted``), the first listed on a tie, so thirty students cover six values five times each."""
    counts = {value: 0 for value in experiment.values}
    for value in [*held, *posted]:
        if value in counts:
            counts[value] += 1
    return min(experiment.values, key=lambda value: counts[value])
