"""Alembic's environment for the lab store: it migrates on the connection seqviz.store.engine.migrate hands it."""

from alembic import context

from seqviz.store.schema import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
