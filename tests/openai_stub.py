"""A local OpenAI-compatible HTTP server: the only stand-in the tests use (for paid APIs).

The real `openai` client talks to it over HTTP. Behaviour is set per test: answer normally,
fail with a status code, or hang. Chat completions answer with whatever `chat` returns for the
request body (a string is sent as the message content verbatim, so tests can send malformed or
hostile output). Embeddings are whatever `embed` returns for the inputs: by default a hash of
each text (only the same text is near), or a real model's vectors when a test needs meaning.
A stub can be started on a given port, so a test can stop it and start it again where its
clients expect it.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


def fake_embedding(text: str, dims: int = 8) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dims).tolist()


class OpenAIStub:
    def __init__(self, port: int = 0) -> None:
        self.fail_status: int | None = None
        self.delay_s = 0.0
        self.requests: list[dict[str, Any]] = []
        self.chat: Callable[[dict[str, Any]], str] = lambda body: "{}"
        self.embed: Callable[[list[str]], list[list[float]]] = (
            lambda texts: [fake_embedding(t) for t in texts])
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                stub.requests.append({"path": self.path, "body": body})
                if stub.delay_s:
                    time.sleep(stub.delay_s)
                if stub.fail_status is not None:
                    self._send(stub.fail_status, {"error": {"message": "stub failure"}})
                    return
                if self.path.endswith("/embeddings"):
                    inputs = body.get("input")
                    inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
                    data = [{"object": "embedding", "index": i, "embedding": vector}
                            for i, vector in enumerate(stub.embed(inputs))]
                    self._send(200, {"object": "list", "data": data, "model": body.get("model"),
                                     "usage": {"prompt_tokens": 1, "total_tokens": 1}})
                    return
                if self.path.endswith("/chat/completions"):
                    content = stub.chat(body)
                    self._send(200, {
                        "id": "chatcmpl-stub", "object": "chat.completion", "created": 0,
                        "model": body.get("model"),
                        "choices": [{"index": 0, "finish_reason": "stop", "message": {
                            "role": "assistant", "content": content}}],
                        "usage": {"prompt_tokens": 50, "completion_tokens": 10,
                                  "total_tokens": 60},
                    })
                    return
                self._send(404, {"error": {"message": f"no route {self.path}"}})

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def chat_requests(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> OpenAIStub:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
