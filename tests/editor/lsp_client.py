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
    def __init__(self, cwd) -> None:
        command = [sys.executable, "-c", "from veritas_dsl.cli import main; main(['lsp'])"]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd
        )
        self.messages: queue.Queue = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

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

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method: str, params: dict) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: dict):
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        reply = self.wait(lambda m: m.get("id") == self.next_id and "method" not in m)
        assert "error" not in reply, reply
        return reply["result"]

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
            self.process.stdout.close()
            self.process.stderr.close()
            self.process.stdin.close()
