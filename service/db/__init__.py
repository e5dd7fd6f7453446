"""Database access: engine, embedded server, table models and migrations."""
