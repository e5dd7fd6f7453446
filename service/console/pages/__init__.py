"""One module per console page, each with its own ``router`` (``service.console.rendering.console_router()``)."""
