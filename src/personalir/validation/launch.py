"""Starting the local judge server for the length of a ``with`` block.

:func:`local_server` runs :mod:`personalir.validation.server` as a child process on a free
loopback port, waits until its ``/health`` answers 200 (the server binds its port only after
the model is loaded), and stops it when the block ends, also when the block raises::

    with local_server("packaged:SmolLM2-135M-Instruct", threads=2) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="local")
        client.chat.completions.create(model=server.model, messages=[...])

A separate process rather than a thread: the server pins its own torch thread count, its
memory is returned when it exits, and a crash in the model code cannot take the caller down.
The child also exits by itself when the process that started it is gone
(``--exit-with-parent``), so a killed caller leaves no server behind.
"""

from __future__ import annotations

import os
import socket
import subprocess  # nosec B404  # starts the judge server, argv list, no shell
import sys
import tempfile
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from personalir.validation.server import is_loopback

LOG_TAIL_LINES = 20


class ServerStartError(RuntimeError):
    """The server process exited, or did not answer ``/health``, before it was ready."""

    def __init__(self, message: str, *, returncode: int | None, log_tail: str):
        super().__init__(message)
        self.returncode = returncode
        self.log_tail = log_tail


@dataclass(frozen=True)
class LocalServer:
    """A running server: ``base_url`` (``http://127.0.0.1:P/v1``) and the served ``model``."""

    base_url: str
    model: str
    pid: int
    process: subprocess.Popen
    log_path: Path


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on at the moment of asking."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host.strip("[]"), 0))
        return s.getsockname()[1]


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of the server log at ``path`` ('' when it cannot be read)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(deque(f, maxlen=lines))
    except OSError:
        return ""


def server_command(
    model: str,
    *,
    threads: int,
    host: str,
    port: int,
    model_cache=None,
    served_name: str | None = None,
) -> list[str]:
    """The command line that starts the server (with this interpreter)."""
    cmd = [sys.executable, "-m", "personalir.validation.server", "--model", model]
    cmd += ["--host", host, "--port", str(port), "--threads", str(threads), "--exit-with-parent"]
    if model_cache is not None:
        cmd += ["--model-cache", str(model_cache)]
    if served_name is not None:
        cmd += ["--served-name", served_name]
    return cmd


def _child_env(threads: int) -> dict[str, str]:
    """This process's environment, with the package importable and the thread count pinned."""
    import personalir

    env = dict(os.environ)
    src = str(Path(personalir.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    env["OMP_NUM_THREADS"] = str(threads)
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    return env


def _stop(process: subprocess.Popen, grace: float = 10.0) -> None:
    """Terminate ``process``; kill it when it has not exited after ``grace`` seconds."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _wait_ready(
    process: subprocess.Popen, health: str, name: str, timeout: float, log_path: Path
) -> None:
    """Poll ``health`` until it reports model ``name``; raise if the process dies or time runs
    out."""
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        code = process.poll()
        if code is not None:
            raise ServerStartError(
                f"the judge server exited with code {code} before it was ready "
                f"(log {log_path}); its last lines:\n{log_tail(log_path)}",
                returncode=code,
                log_tail=log_tail(log_path),
            )
        try:
            r = httpx.get(health, timeout=2.0)
            if r.status_code == 200 and r.json().get("model") == name:
                return
        except (httpx.HTTPError, ValueError):
            pass  # not listening yet: the model is still loading
        if time.monotonic() > deadline:
            raise ServerStartError(
                f"the judge server did not answer {health} within {timeout:g} s "
                f"(pid {process.pid}, log {log_path}); its last lines:\n{log_tail(log_path)}",
                returncode=process.poll(),
                log_tail=log_tail(log_path),
            )
        time.sleep(0.2)


@contextmanager
def local_server(
    model: str,
    *,
    threads: int,
    model_cache=None,
    host: str = "127.0.0.1",
    port: int | None = None,
    startup_timeout: float = 300,
    log_path=None,
    served_name: str | None = None,
):
    """Run the judge server on ``model`` for the ``with`` block; yields a :class:`LocalServer`.

    ``port`` None picks a free loopback port. The server's output goes to ``log_path`` (kept),
    or to a temporary file removed afterwards. Raises :class:`ServerStartError` with the exit
    code and the last 20 log lines when the server exits or is not healthy within
    ``startup_timeout`` seconds, and ``ValueError`` for a host that is not a loopback address.
    On leaving the block the server is terminated (killed after 10 s).
    """
    if not is_loopback(host):
        raise ValueError(
            f"host {host!r} is not a loopback address; the server has no authentication"
        )
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    port = free_port(host) if port is None else port
    url_host = f"[{host.strip('[]')}]" if ":" in host else host
    root = f"http://{url_host}:{port}"
    temporary = log_path is None
    if temporary:
        fd, name = tempfile.mkstemp(prefix="personalir-judge-server-", suffix=".log")
        os.close(fd)
        log_path = Path(name)
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    cmd = server_command(
        model,
        threads=threads,
        host=host,
        port=port,
        model_cache=model_cache,
        served_name=served_name,
    )
    with open(log_path, "ab") as log:
        process = subprocess.Popen(  # nosec B603  # this Python's judge server, no shell
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=_child_env(threads),
        )
    try:
        _wait_ready(process, f"{root}/health", served_name or model, startup_timeout, log_path)
        yield LocalServer(
            base_url=f"{root}/v1",
            model=served_name or model,
            pid=process.pid,
            process=process,
            log_path=log_path,
        )
    finally:
        _stop(process)
        if temporary:
            log_path.unlink(missing_ok=True)
