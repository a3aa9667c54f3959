"""Labs with hashed keys and transfer codes, their models, their runs and the runs' snapshots.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "labs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("last_seen_at", sa.Float(), nullable=False, index=True),
    )
    op.create_table(
        "lab_keys",
        sa.Column("key_hash", sa.String(64), primary_key=True),
        sa.Column("lab_id", sa.String(32), sa.ForeignKey("labs.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("created_at", sa.Float(), nullable=False),
    )
    op.create_table(
        "lab_transfers",
        sa.Column("code_hash", sa.String(64), primary_key=True),
        sa.Column("lab_id", sa.String(32), sa.ForeignKey("labs.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("expires_at", sa.Float(), nullable=False),
    )
    op.create_table(
        "models",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("lab_id", sa.String(32), sa.ForeignKey("labs.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("family", sa.String(64), nullable=False),
        sa.Column("task", sa.String(64), nullable=True),
        sa.Column("origin", sa.String(32), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.UniqueConstraint("lab_id", "fingerprint"),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("lab_id", sa.String(32), sa.ForeignKey("labs.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("watch", sa.JSON(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False, index=True),
        sa.Column("phase", sa.String(32), nullable=True),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("trained_s", sa.Float(), nullable=False),
        sa.Column("losses", sa.JSON(), nullable=False),
        sa.Column("metric_history", sa.JSON(), nullable=False),
        sa.Column("stop_requested", sa.Boolean(), nullable=False),
        sa.Column("stop_reason", sa.String(32), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("metrics", sa.JSON(), nullable=True),
        sa.Column("train_seconds", sa.Float(), nullable=True),
        sa.Column("model_id", sa.Integer(), sa.ForeignKey("models.id", ondelete="SET NULL"), nullable=True),
        sa.Column("worker", sa.String(200), nullable=True),
        sa.Column("worker_pid", sa.Integer(), nullable=True),
        sa.Column("submitted_at", sa.Float(), nullable=False, index=True),
        sa.Column("started_at", sa.Float(), nullable=True),
        sa.Column("ended_at", sa.Float(), nullable=True),
        sa.Column("updated_at", sa.Float(), nullable=False),
    )
    op.create_table(
        "run_snapshots",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
    )


def downgrade() -> None:
    for table in ("run_snapshots", "runs", "models", "lab_transfers", "lab_keys", "labs"):
        op.drop_table(table)
