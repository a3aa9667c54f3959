"""Runs go on from their last saved point: the saved training state, its step, how many times a worker began
the run, and a line for the visitor about it.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("saved_step", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("saved_state", sa.LargeBinary(), nullable=True))
        batch.add_column(sa.Column("note", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        for column in ("note", "saved_state", "saved_step", "attempts"):
            batch.drop_column(column)
