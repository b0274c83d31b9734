"""A real Chroma server on loopback for tests and benchmarks: `chroma run`, shipped with chromadb.

    with ChromaServer(tmp_path / "chroma") as server:
        server.url  # http://127.0.0.1:PORT

`stop()` terminates it (as a crash or an outage would look to a client); `start()` brings it
back on the same data folder and port (Chroma's listener reuses the address).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

STARTUP_TIMEOUT = 60.0


def chroma_executable() -> str:
    """The `chroma` script next to this interpreter (the venv's), else the one on PATH."""
    beside = Path(sys.executable).parent / "chroma"
    if beside.is_file():
        return str(beside)
    found = shutil.which("chroma")
    if found is None:
        raise RuntimeError("the `chroma` command (installed with the chromadb package) was not found")
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def heartbeat(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=timeout) as resp:
            return "nanosecond heartbeat" in json.loads(resp.read())
    except (urllib.error.URLError, OSError, ValueError):
        return False


class ChromaServer:
    """One `chroma run --path DIR --host 127.0.0.1 --port N` subprocess."""

    def __init__(self, path: Path, port: int | None = None) -> None:
        self.path = path
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = path.parent / f"{path.name}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, port: int | None = None) -> ChromaServer:
        if self.proc is not None:
            return self
        if port is not None:
            self.port = port
        self.path.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, ANONYMIZED_TELEMETRY="False", NO_COLOR="1")
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [chroma_executable(), "run", "--path", str(self.path), "--host", "127.0.0.1", "--port", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
            )
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if heartbeat(self.url, timeout=1.0):
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.stop()
        tail = self.log_path.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"`chroma run` did not answer at {self.url} within {STARTUP_TIMEOUT:g}s; log:\n{tail}")

    def stop(self) -> None:
        """Terminate the server (and wait for it), like an outage seen from the client."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)  # in case a test paused it
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)

    def pause(self) -> None:
        """SIGSTOP: the port stays open but nothing answers (a hung server)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def __enter__(self) -> ChromaServer:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
