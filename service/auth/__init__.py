"""API keys, roles and the principal behind each request."""
