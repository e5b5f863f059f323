"""``dealer serve`` and ``dealer run`` with ``DEALER_WEB``: the real commands, as processes,
serve the status page on the address and port their settings name."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")

DEALER = [str(Path(sys.executable).parent / "dealer")]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answer(url: str, within: float = 20.0) -> bytes:
    """The body at ``url`` once the server listens (waiting for a process to bind its
    socket: no game time is involved)."""
    ends = time.monotonic() + within
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return response.read()
        except OSError:
            if time.monotonic() > ends:
                raise
            time.sleep(0.1)


@pytest.mark.parametrize("command", [["serve", "--port", "{port}"], ["run"]])
def test_the_commands_serve_the_page(tmp_path: Path, command: list[str]) -> None:
    # One backend is enough: the commands are tested here, the views on both in test_pages.
    from dealer.store.db import make_engine, migrate

    database_url = f"sqlite:///{tmp_path / 'dealer.db'}"
    engine = make_engine(database_url)
    migrate(engine)
    engine.dispose()
    port = free_port()
    env = {**os.environ, "DEALER_HOME": str(tmp_path), "DEALER_DATABASE_URL": database_url,
           "DEALER_INBOX": f"dir:{tmp_path / 'inbox'}", "DEALER_PUBLISH": f"dir:{tmp_path / 'outbox'}",
           "DEALER_DEADLINE_OVERRIDES": "", "DEALER_WEB": "true", "DEALER_WEB_PORT": str(port)}
    subprocess.run(DEALER + ["player", "add", "<i>eve</i>"], env=env, check=True, capture_output=True)
    process = subprocess.Popen(DEALER + [a.format(port=port) for a in command], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        mark = json.loads(answer(f"http://127.0.0.1:{port}/api/changes"))
        assert set(mark) == {"mark"}
        page = answer(f"http://127.0.0.1:{port}/players/%3Ci%3Eeve%3C%2Fi%3E").decode()
        assert "<h1>&lt;i&gt;eve&lt;/i&gt;</h1>" in page
        player = json.loads(answer(f"http://127.0.0.1:{port}/api/players/%3Ci%3Eeve%3C%2Fi%3E"))
        assert (player["name"], player["chips"], player["games"]) == ("<i>eve</i>", 0, [])
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)
