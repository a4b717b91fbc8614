"""A fake OpenAI-compatible chat-completions server on 127.0.0.1 for the LLM critic tests.

``replies`` is a list consumed one per request: a string (the reply's content), an int (that
HTTP status with an error body), or ``("sleep", seconds, content)`` (answer late). When the
list is exhausted the last entry repeats. Every request body is kept in ``requests``.
:func:`misbehaving_llm` is a raw server that drips, floods or answers what is not the
chat-completions JSON.
"""

from __future__ import annotations

import contextlib
import json
import re
import socketserver
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextlib.contextmanager
def fake_llm(replies):
    replies = list(replies)
    requests: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append({"path": self.path, "body": body})
            reply = replies.pop(0) if len(replies) > 1 else replies[0]
            if isinstance(reply, tuple):
                _, seconds, reply = reply
                time.sleep(seconds)
            if isinstance(reply, int):
                self.send_response(reply)
                self.end_headers()
                self.wfile.write(b'{"error": "busy"}')
                return
            data = json.dumps({"choices": [{"message": {"role": "assistant",
                                                        "content": reply}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


#: Behaviours of :func:`misbehaving_llm`.
BEHAVIOURS = ("drip_status", "drip_body", "claims_3gb", "endless", "endless_chunked",
              "not_json", "no_choices", "deep_json")
_REPLY = json.dumps({"choices": [{"message": {"role": "assistant", "content": "0.5"}}]})


@contextlib.contextmanager
def misbehaving_llm(behaviour: str, *, interval: float = 0.5, drips: int = 20,
                    limit: int = 64 * 1024 * 1024):
    """A raw HTTP server on 127.0.0.1 that misbehaves after reading a request. Every behaviour
    ends by itself (``drips`` bytes at ``interval`` seconds, at most ``limit`` bytes), so a
    client without bounds still finishes, late or with too much.

    - ``drip_status``: the status line one byte every ``interval`` s, then a valid reply;
    - ``drip_body``: the headers, then ``drips`` spaces one every ``interval`` s (JSON allows
      them), then a valid reply;
    - ``claims_3gb``: ``Content-Length: 3000000000``, then zeros up to ``limit``;
    - ``endless`` / ``endless_chunked``: a reply without a length (or in chunks) that goes on
      up to ``limit`` bytes;
    - ``not_json``, ``no_choices``, ``deep_json``: a 200 reply that is not the chat-completions
      JSON.

    Yields ``(url, stats)``: ``stats["requests"]`` counts requests, ``stats["sent"]`` the
    bytes of the last reply sent before the client went away (or all of them),
    ``stats["dripped"]`` those of them sent one at a time.
    """
    if behaviour not in BEHAVIOURS:
        raise ValueError(behaviour)
    stats = {"requests": 0, "sent": 0, "dripped": 0}
    stop = threading.Event()

    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            sock = self.request
            head = b""
            while b"\r\n\r\n" not in head:
                part = sock.recv(65536)
                if not part:
                    return
                head += part
            header, _, body = head.partition(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length:\s*(\d+)", header).group(1))
            while len(body) < length:
                body += sock.recv(65536)
            stats["requests"] += 1
            stats["sent"] = stats["dripped"] = 0

            def send(data: bytes) -> bool:
                try:
                    sock.sendall(data)
                except OSError:
                    return False
                stats["sent"] += len(data)
                return True

            def drip(data: bytes) -> bool:  # False when stopped or the client went away
                for byte in data:
                    if stop.wait(interval) or not send(bytes([byte])):
                        return False
                    stats["dripped"] += 1
                return True

            reply = _REPLY.encode()
            if behaviour == "drip_status":
                if drip(b"HTTP/1.1 200 OK\r\n"[:drips]):
                    send(b"HTTP/1.1 200 OK\r\n"[drips:] + _head(len(reply)) + reply)
            elif behaviour == "drip_body":
                if send(b"HTTP/1.1 200 OK\r\n" + _head(drips + len(reply))) and \
                        drip(b" " * drips):
                    send(reply)
            elif behaviour in ("claims_3gb", "endless", "endless_chunked"):
                if behaviour == "claims_3gb":
                    start = b"HTTP/1.1 200 OK\r\nContent-Length: 3000000000\r\n\r\n"
                    block = bytes(65536)
                elif behaviour == "endless":
                    start = b'HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{"choices": ['
                    block = b" " * 65536
                else:
                    start = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                             b'd\r\n{"choices": [\r\n')
                    block = b"10000\r\n" + b" " * 65536 + b"\r\n"
                if send(start):
                    while stats["sent"] < limit and not stop.is_set() and send(block):
                        pass
            else:
                text = {"not_json": b"<html>Welcome to nginx!</html>",
                        "no_choices": b'{"error": {"message": "model not found"}}',
                        "deep_json": b"[" * 100_000 + b"]" * 100_000}[behaviour]
                send(b"HTTP/1.1 200 OK\r\n" + _head(len(text)) + text)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", stats
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        thread.join()


def _head(length: int) -> bytes:
    return (f"Content-Type: application/json\r\nContent-Length: {length}\r\n"
            f"Connection: close\r\n\r\n").encode()
