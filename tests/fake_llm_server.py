"""A fake OpenAI-compatible chat-completions server on 127.0.0.1 for the LLM critic tests.

``replies`` is a list consumed one per request: a string (the reply's content), an int (that
HTTP status with an error body), or ``("sleep", seconds, content)`` (answer late). When the
list is exhausted the last entry repeats. Every request body is kept in ``requests``.
"""

from __future__ import annotations

import contextlib
import json
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
