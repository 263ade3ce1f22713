"""The Store port and its two backends (SQLite, PostgreSQL + pgvector), their schemas, opening and copying stores."""
