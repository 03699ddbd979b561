"""The uvicorn server behind ``attnlab serve``, with read and write deadlines.

uvicorn on its own closes only idle keep-alive connections: a client that
opens a connection and sends nothing, or trickles a request head or body one
byte at a time, holds a connection (and, for a body, a task) for as long as it
likes. :class:`GuardedH11Protocol` gives every request a deadline:

* its head (request line and headers) must arrive within ``header_timeout``
  seconds of the connection opening or of the previous response;
* its body within ``body_timeout`` seconds of the head;
* a response the client stops reading is dropped after ``body_timeout``
  seconds without progress.

Past a deadline the connection is closed. Request heads are limited to
``MAX_HEADER_BYTES`` (431, however they arrive); bodies to
``attnlab.web.server.MAX_BODY_BYTES`` by the app's ``BodyLimit`` (413).
"""

from __future__ import annotations

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT_S = 10.0
BODY_TIMEOUT_S = 10.0
KEEP_ALIVE_S = 5  # an idle connection between requests
MAX_HEADER_BYTES = 16 * 1024


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request's head, body and on stalled writes."""

    header_timeout = HEADER_TIMEOUT_S
    body_timeout = BODY_TIMEOUT_S

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._guard = None  # the read deadline: (phase, TimerHandle)
        self._write_guard = None
        self._head_seen, self._head_tail = 0, b""  # bytes of the request head so far, its last 3

    # ----------------------------------------------------------- read deadlines
    def _arm(self, phase: str, seconds: float) -> None:
        self._disarm()
        self._guard = (phase, self.loop.call_later(seconds, self._expire))

    def _disarm(self) -> None:
        if self._guard is not None:
            self._guard[1].cancel()
            self._guard = None

    def _expire(self) -> None:
        self._guard = None
        if not self.transport.is_closing():
            self.transport.close()

    def _follow(self) -> None:
        """Move the deadline with the request: head -> body -> none while the app answers."""
        phase = self._guard[0] if self._guard else None
        their = self.conn.their_state
        if their is h11.IDLE:
            if phase != "head":
                self._arm("head", self.header_timeout)
        elif their is h11.SEND_BODY:
            if phase != "body":
                self._arm("body", self.body_timeout)
        else:
            self._disarm()

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._arm("head", self.header_timeout)

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE and not self._head_fits(data):
            return
        super().data_received(data)
        self._follow()

    def _head_fits(self, data: bytes) -> bool:
        """Count the request head's bytes across reads (h11 alone limits only a head that arrives in
        pieces); over MAX_HEADER_BYTES: 431 and close."""
        buf = self._head_tail + data
        end = buf.find(b"\r\n\r\n")
        if end >= 0:
            size = self._head_seen - len(self._head_tail) + end + 4
            self._head_seen, self._head_tail = 0, b""
        else:
            self._head_seen += len(data)
            size, self._head_tail = self._head_seen, buf[-3:]
        if size <= MAX_HEADER_BYTES:
            return True
        body = f"request head over {MAX_HEADER_BYTES} bytes".encode()
        self.transport.write(
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
        )
        self.transport.close()
        return False

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._disarm()  # the next request's head gets a fresh deadline
            self._follow()

    def connection_lost(self, exc) -> None:
        self._disarm()
        if self._write_guard is not None:
            self._write_guard.cancel()
            self._write_guard = None
        super().connection_lost(exc)

    # ----------------------------------------------------------- write deadline
    def pause_writing(self) -> None:
        super().pause_writing()
        if self._write_guard is None:
            self._write_guard = self.loop.call_later(self.body_timeout, self._expire_write)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._write_guard is not None:
            self._write_guard.cancel()
            self._write_guard = None

    def _expire_write(self) -> None:
        self._write_guard = None
        if not self.transport.is_closing():
            self.transport.abort()  # the buffered response is dropped; the app's send() then ends


def server_config(
    app,
    host: str = "127.0.0.1",
    port: int = 8000,
    header_timeout: float = HEADER_TIMEOUT_S,
    body_timeout: float = BODY_TIMEOUT_S,
    log_level: str = "warning",
) -> uvicorn.Config:
    """The uvicorn configuration ``attnlab serve`` runs: h11 with the deadlines above, idle
    keep-alive connections closed after KEEP_ALIVE_S, request heads limited to MAX_HEADER_BYTES."""
    protocol = type(
        "GuardedH11Protocol",
        (GuardedH11Protocol,),
        {"header_timeout": float(header_timeout), "body_timeout": float(body_timeout)},
    )
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol,
        ws="none",
        timeout_keep_alive=KEEP_ALIVE_S,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        log_level=log_level,
        server_header=False,
    )
