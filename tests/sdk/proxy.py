"""A TCP proxy in a thread that forwards to a live server and can drop the next ``to_drop`` answers (each
read from the server is one small answer here): the server has done the work, the client sees its
connection closed without a response, as after a network failure or a load balancer's timeout."""

from __future__ import annotations

import contextlib
import socket
import threading
from urllib.parse import urlsplit


class DroppingProxy:
    def __init__(self, upstream: str, *, drop: int) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.to_drop = drop
        self.dropped = 0
        self.connections = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> DroppingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept(); close() alone does not
        self._listener.close()
        self._thread.join(timeout=5)

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _drop_this(self) -> bool:
        with self._lock:
            if self.dropped < self.to_drop:
                self.dropped += 1
                return True
            return False

    def _relay(self, client: socket.socket) -> None:
        server = socket.create_connection(self.upstream)

        def upstream() -> None:
            with contextlib.suppress(OSError):
                while data := client.recv(65536):
                    server.sendall(data)

        threading.Thread(target=upstream, daemon=True).start()
        with contextlib.suppress(OSError):
            while data := server.recv(65536):
                if self._drop_this():
                    # The server answered, so it has done the work: close without passing the answer on.
                    break
                client.sendall(data)
        for s in (client, server):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
