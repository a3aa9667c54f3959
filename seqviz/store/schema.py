"""The lab store's tables (SQLAlchemy 2 ORM): labs and their keys, models, runs and their snapshots.

A *lab* belongs to a browser: the browser keeps a random key (128 bits), the store keeps only its sha256
(``lab_keys``); another device that joined the lab has a key of its own for the same lab. Everything a lab
makes hangs off it with ``ON DELETE CASCADE``, so forgetting or purging a lab deletes its models, runs,
snapshots, keys and transfer codes in one statement.

Times are seconds since the epoch (``time.time()``), the clock the run pages already speak. This file is
the schema as it is now; Alembic's revisions (``seqviz/store/migrations``) bring an older database to it.
"""

from __future__ import annotations

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Integer, LargeBinary, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

KEY_HASH = String(64)  # sha256, hex
ID = String(32)  # 128 random bits, hex


class Base(DeclarativeBase):
    pass


class Lab(Base):
    __tablename__ = "labs"

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    created_at: Mapped[float] = mapped_column(Float)
    last_seen_at: Mapped[float] = mapped_column(Float, index=True)  # purge: labs idle too long go


class LabKey(Base):
    """One browser's key of a lab, hashed (a lab taken to another device has two)."""

    __tablename__ = "lab_keys"

    key_hash: Mapped[str] = mapped_column(KEY_HASH, primary_key=True)
    lab_id: Mapped[str] = mapped_column(ForeignKey("labs.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[float] = mapped_column(Float)


class LabTransfer(Base):
    """A short one-time code that joins another browser to a lab, hashed, until it expires."""

    __tablename__ = "lab_transfers"

    code_hash: Mapped[str] = mapped_column(KEY_HASH, primary_key=True)
    lab_id: Mapped[str] = mapped_column(ForeignKey("labs.id", ondelete="CASCADE"), index=True)
    expires_at: Mapped[float] = mapped_column(Float)


class Model(Base):
    """A checkpoint a lab uploaded or trained: the file's bytes and what pickers show of it."""

    __tablename__ = "models"
    __table_args__ = (UniqueConstraint("lab_id", "fingerprint"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    lab_id: Mapped[str] = mapped_column(ForeignKey("labs.id", ondelete="CASCADE"), index=True)
    fingerprint: Mapped[str] = mapped_column(KEY_HASH)  # checkpoints.fingerprint of data
    name: Mapped[str] = mapped_column(String(200))
    family: Mapped[str] = mapped_column(String(64))
    task: Mapped[str | None] = mapped_column(String(64))
    origin: Mapped[str] = mapped_column(String(32))  # "uploaded" or "trained here"
    size: Mapped[int] = mapped_column(Integer)  # bytes of data
    data: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)  # read only when asked for (models.data)
    created_at: Mapped[float] = mapped_column(Float)


class Run(Base):
    """A training run from submission to end: its spec, where it is, its progress, its saved point, its model.

    One run may serve many labs (:class:`RunFollower`): a run identical to one queued, training or finished (the
    same ``key``, seqviz.runs.identity_key) is joined, not trained again. ``lab_id`` is the lab the record hangs
    off (the first to ask for it; handed to another follower when that lab is forgotten)."""

    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    lab_id: Mapped[str] = mapped_column(ForeignKey("labs.id", ondelete="CASCADE"), index=True)
    key: Mapped[str | None] = mapped_column(KEY_HASH, index=True)  # identical runs share it (None: never joined)
    name: Mapped[str] = mapped_column(String(200))
    spec: Mapped[dict] = mapped_column(JSON)  # seqviz.runs.RunSpec's fields
    watch: Mapped[dict | None] = mapped_column(JSON)  # seqviz.worker.SnapshotView's fields
    status: Mapped[str] = mapped_column(String(16), index=True)  # seqviz.progress.STATUSES
    phase: Mapped[str | None] = mapped_column(String(32))
    step: Mapped[int] = mapped_column(Integer, default=0)
    steps: Mapped[int] = mapped_column(Integer)
    trained_s: Mapped[float] = mapped_column(Float, default=0.0)  # seconds of training, by the worker's clock
    losses: Mapped[list] = mapped_column(JSON, default=list)  # [[step, loss], ...]
    metric_history: Mapped[list] = mapped_column(JSON, default=list)  # [[step, held-out metric], ...]
    stop_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    stop_reason: Mapped[str | None] = mapped_column(String(32))
    error: Mapped[str | None] = mapped_column(Text)
    note: Mapped[str | None] = mapped_column(Text)  # one line for the visitor ("went on from step 340 ...")
    metrics: Mapped[dict | None] = mapped_column(JSON)
    train_seconds: Mapped[float | None] = mapped_column(Float)
    model_id: Mapped[int | None] = mapped_column(ForeignKey("models.id", ondelete="SET NULL"))
    worker: Mapped[str | None] = mapped_column(String(200))
    worker_pid: Mapped[int | None] = mapped_column(Integer)
    attempts: Mapped[int] = mapped_column(Integer, default=0)  # times a worker began it (2+: it went on)
    saved_step: Mapped[int] = mapped_column(Integer, default=0)  # the step its saved point (RunPoint) holds
    submitted_at: Mapped[float] = mapped_column(Float, index=True)
    started_at: Mapped[float | None] = mapped_column(Float)
    ended_at: Mapped[float | None] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)  # the last write of any kind (a worker's heartbeat)


class RunFollower(Base):
    """A lab following a run: it asked for it, or for one identical. Each follower gets its own copy of the model
    when the run ends (``model_id``); one that stopped following (``left_at``) gets none."""

    __tablename__ = "run_followers"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    lab_id: Mapped[str] = mapped_column(ForeignKey("labs.id", ondelete="CASCADE"), primary_key=True, index=True)
    joined_at: Mapped[float] = mapped_column(Float)
    left_at: Mapped[float | None] = mapped_column(Float)
    model_id: Mapped[int | None] = mapped_column(ForeignKey("models.id", ondelete="SET NULL"))


class RunPoint(Base):
    """A training run's latest saved point, where it goes on from after a lost worker. Beside the run's row, not in
    it: SQLite writes a row whole, so a saved point of megabytes in it was written again by each progress report."""

    __tablename__ = "run_points"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    state: Mapped[bytes] = mapped_column(LargeBinary)  # seqviz.train.TrainState.to_bytes()


class Snapshot(Base):
    """A "watch it learn" snapshot of a run: the view's trace of the sentence after ``step`` steps (pickled)."""

    __tablename__ = "run_snapshots"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    step: Mapped[int] = mapped_column(Integer)
    data: Mapped[bytes] = mapped_column(LargeBinary)


# --- Classes (seqviz.store.classes): a teacher's class, its members and its board ------------------------------


class Class(Base):
    """A class a teacher started: the students' code (public: it is the class link), the teacher's key (hashed),
    and what the board asks for (its experiment). Idle longer than CLASS_KEEP_DAYS, it is purged."""

    __tablename__ = "classes"

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    code: Mapped[str] = mapped_column(String(16), unique=True)  # the link's ?c=, Crockford base32
    key_hash: Mapped[str] = mapped_column(KEY_HASH)  # sha256 of the teacher's key
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[float] = mapped_column(Float)
    last_active_at: Mapped[float] = mapped_column(Float, index=True)  # purge: classes idle too long go
    closed: Mapped[bool] = mapped_column(Boolean, default=False)  # no new posts
    auto_post: Mapped[bool] = mapped_column(Boolean, default=False)  # members' finished runs are posted for them
    experiment: Mapped[dict | None] = mapped_column(JSON)  # seqviz.store.classes.Experiment's fields


class ClassMember(Base):
    """A lab in a class: every browser that opened the class link (a reload or another server finds it by its lab).
    ``value``: the experiment's value this member was handed; ``teacher``: the lab proved the teacher's key."""

    __tablename__ = "class_members"

    class_id: Mapped[str] = mapped_column(ForeignKey("classes.id", ondelete="CASCADE"), primary_key=True)
    lab_id: Mapped[str] = mapped_column(ForeignKey("labs.id", ondelete="CASCADE"), primary_key=True, index=True)
    joined_at: Mapped[float] = mapped_column(Float)
    nickname: Mapped[str | None] = mapped_column(String(64))
    value: Mapped[dict | None] = mapped_column(JSON)  # {"value": ...}: JSON keeps an int, a float or a family
    teacher: Mapped[bool] = mapped_column(Boolean, default=False)


class ClassPost(Base):
    """A finished run on a class's board: who posted it (their lab; NULL once that lab is gone, the post stays), what
    it was, what it measured on held-out data, and the poster's model (NULL once they removed it)."""

    __tablename__ = "class_posts"
    __table_args__ = (UniqueConstraint("class_id", "lab_id", "run_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    class_id: Mapped[str] = mapped_column(ForeignKey("classes.id", ondelete="CASCADE"), index=True)
    lab_id: Mapped[str | None] = mapped_column(ForeignKey("labs.id", ondelete="SET NULL"), index=True)
    run_id: Mapped[str] = mapped_column(ID)  # not a key: a lab keeps only its newest runs, the post stays
    nickname: Mapped[str] = mapped_column(String(64))
    spec: Mapped[dict] = mapped_column(JSON)  # seqviz.runs.RunSpec's fields
    measures: Mapped[dict] = mapped_column(JSON)  # held-out measure -> number (seqviz.store.classes.measures)
    train_seconds: Mapped[float | None] = mapped_column(Float)
    fingerprint: Mapped[str | None] = mapped_column(KEY_HASH)
    model_id: Mapped[int | None] = mapped_column(ForeignKey("models.id", ondelete="SET NULL"))
    posted_at: Mapped[float] = mapped_column(Float, index=True)
