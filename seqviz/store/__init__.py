"""The lab store: what a browser's lab keeps (its models, its runs with their progress) in a real database.

SQLAlchemy 2 for every read and write, a SQLite file by default and PostgreSQL by one setting (engine.py),
Alembic for the schema (migrations/). Labs and their keys: labs.py; a lab's models: models.py; its runs:
runs.py. Nothing here imports streamlit or torch.
"""

from seqviz.store.engine import Database, StoreUnavailable, database, database_url, describe

__all__ = ["Database", "StoreUnavailable", "database", "database_url", "describe"]
