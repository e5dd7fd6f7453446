"""Learning from the conversation (docs/design.md §3.9, docs/extraction.md)."""
