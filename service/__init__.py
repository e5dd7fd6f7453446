"""ctxmem service: FastAPI app, settings, database and per-domain packages."""
