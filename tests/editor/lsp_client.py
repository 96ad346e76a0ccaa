"""A small client of `ver lsp`: the server in a subprocess, JSON-RPC over its stdin and stdout."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time

#: Generous: the first check imports the engines' modules and loads the models.
TIMEOUT_S = 120.0


class Client:
    """``prelude``: Python run in the server's process before it starts (tests patch it so)."""

    def __init__(self, cwd, prelude: str = "") -> None:
        code = f"{prelude}\nfrom veritas_dsl.cli import main; main(['lsp'])"
        command = [sys.executable, "-c", code]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd
        )
        self.messages: queue.Queue = queue.Queue()
        self.next_id = 0
        self.log = bytearray()  # the server's standard error, read so that its pipe never fills
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_log, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            self.messages.put(json.loads(stream.read(length)))

    def _read_log(self) -> None:
        for line in self.process.stderr:
            self.log += line

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method: str, params: dict) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: dict):
        reply = self.call(method, params)
        assert "error" not in reply, reply
        return reply["result"]

    def call(self, method: str, params) -> dict:
        """The reply to a request: its ``result`` or its ``error``."""
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == self.next_id and "method" not in m)

    def wait(self, matches, timeout: float = TIMEOUT_S) -> dict:
        """The next message ``matches`` accepts (the others are dropped)."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            assert remaining > 0, "no answer from the server"
            message = self.messages.get(timeout=remaining)
            if message.get("method") == "workspace/configuration":  # pygls may ask; say nothing
                self.send({"id": message["id"], "result": [None]})
            elif matches(message):
                return message

    def diagnostics(self, uri: str) -> dict:
        """The next diagnostics published for ``uri``."""
        return self.wait(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
            )
        )["params"]

    def start(self, root_uri: str) -> None:
        self.request("initialize", {"processId": None, "rootUri": root_uri, "capabilities": {}})
        self.notify("initialized", {})

    def stop(self) -> int:
        self.request("shutdown", None)
        self.notify("exit", None)
        try:
            return self.process.wait(timeout=30)
        finally:
            self.close()

    def close(self) -> None:
        """End the server if it is still there, and close the pipes."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()
        self.process.stderr.close()
        self.process.stdin.close()
