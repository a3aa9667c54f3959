"""Identical runs are trained once: a run's identity key, and the labs following each run (every run so far is
followed by the lab that asked for it, with its model).

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("key", sa.String(64), nullable=True))
        batch.create_index("ix_runs_key", ["key"])
    op.create_table(
        "run_followers",
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("lab_id", sa.String(32), sa.ForeignKey("labs.id", ondelete="CASCADE"), primary_key=True,
                  index=True),
        sa.Column("joined_at", sa.Float(), nullable=False),
        sa.Column("left_at", sa.Float(), nullable=True),
        sa.Column("model_id", sa.Integer(), sa.ForeignKey("models.id", ondelete="SET NULL"), nullable=True),
    )
    op.execute("INSERT INTO run_followers (run_id, lab_id, joined_at, left_at, model_id) "
               "SELECT id, lab_id, submitted_at, NULL, model_id FROM runs")


def downgrade() -> None:
    op.drop_table("run_followers")
    with op.batch_alter_table("runs") as batch:
        batch.drop_index("ix_runs_key")
        batch.drop_column("key")
