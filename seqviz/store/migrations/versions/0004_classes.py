"""Classes: a teacher's class (its code, hashed teacher key, experiment), its members (labs) and its board's posts.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "classes",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("code", sa.String(16), nullable=False, unique=True),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("last_active_at", sa.Float(), nullable=False, index=True),
        sa.Column("closed", sa.Boolean(), nullable=False),
        sa.Column("auto_post", sa.Boolean(), nullable=False),
        sa.Column("experiment", sa.JSON(), nullable=True),
    )
    op.create_table(
        "class_members",
        sa.Column("class_id", sa.String(32), sa.ForeignKey("classes.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("lab_id", sa.String(32), sa.ForeignKey("labs.id", ondelete="CASCADE"), primary_key=True,
                  index=True),
        sa.Column("joined_at", sa.Float(), nullable=False),
        sa.Column("nickname", sa.String(64), nullable=True),
        sa.Column("value", sa.JSON(), nullable=True),
        sa.Column("teacher", sa.Boolean(), nullable=False),
    )
    op.create_table(
        "class_posts",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("class_id", sa.String(32), sa.ForeignKey("classes.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("lab_id", sa.String(32), sa.ForeignKey("labs.id", ondelete="SET NULL"), nullable=True, index=True),
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("nickname", sa.String(64), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("measures", sa.JSON(), nullable=False),
        sa.Column("train_seconds", sa.Float(), nullable=True),
        sa.Column("fingerprint", sa.String(64), nullable=True),
        sa.Column("model_id", sa.Integer(), sa.ForeignKey("models.id", ondelete="SET NULL"), nullable=True),
        sa.Column("posted_at", sa.Float(), nullable=False, index=True),
        sa.UniqueConstraint("class_id", "lab_id", "run_id"),
    )


def downgrade() -> None:
    op.drop_table("class_posts")
    op.drop_table("class_members")
    op.drop_table("classes")
