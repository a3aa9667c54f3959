"""A run's saved point moves out of its row into a table of its own (SQLite writes a row whole: each progress report
wrote the megabytes of its saved point again).

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_points",
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("state", sa.LargeBinary(), nullable=False),
    )
    op.execute("INSERT INTO run_points (run_id, state) SELECT id, saved_state FROM runs WHERE saved_state IS NOT NULL")
    # Not a batch (which, on SQLite, copies the table and drops the old one: ON DELETE CASCADE would empty its
    # followers); SQLite drops a column itself since 3.35.
    op.drop_column("runs", "saved_state")


def downgrade() -> None:
    op.add_column("runs", sa.Column("saved_state", sa.LargeBinary(), nullable=True))
    op.execute("UPDATE runs SET saved_state = (SELECT state FROM run_points WHERE run_points.run_id = runs.id)")
    op.drop_table("run_points")
