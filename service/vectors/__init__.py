"""Vector recall (docs/design.md §3.8): the index behind one interface, the embedders behind another, the outbox."""
