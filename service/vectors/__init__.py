"""Vector recall (DESIGN §3.8): the index behind one interface, the embedders behind another, the outbox."""
