"""The HTTP endpoint of ``dealer run`` under a stranger's load (issue 36, items 3 and 4),
against the real daemon in a process of its own, on 127.0.0.1 only.

- 1,100 slow clients (each sends half a request head and waits) once took every file
  descriptor of a daemon with the usual 1,024: every pass failed with "Too many open
  files" and the log grew 3 MB/s. Now the endpoint keeps at most its cap of connections
  (a slow one loses its place to a sender that is ready), signed webhooks are stored,
  passes go on, and the log stays small.
- One unsigned 400 MB ``POST /discourse`` was read whole before any check (RSS 95 -> 770
  MiB). Now its ``Content-Length`` is refused before a byte is read, and a body sent
  without a length is read no further than the cap: the sender must stop early and the
  daemon's peak RSS grows by less than 20 MB.

Every loop here is bounded in count and in time, and the daemon is stopped at the end.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

sys.path.insert(0, str(Path(__file__).parent))
from mailservers import free_port  # noqa: E402

from dealer.shell.webhooks import sign  # noqa: E402

SECRET = "k"
SLOW_CLIENTS = 1100
FILE_LIMIT = 1024
"""The daemon's descriptor limit in these tests: a host's usual default, no LimitNOFILE."""
BODY = 400 * 1000 * 1000
MB = 1 << 20


class Daemon:
    """``dealer run`` in a process of its own with the webhook endpoint on 127.0.0.1."""

    def __init__(self, root: Path, template: Path) -> None:
        self.root = root
        self.port = free_port()
        shutil.copyfile(template, root / "dealer.db")
        self.env = {**os.environ, "DEALER_HOME": str(root), "DEALER_DATABASE_URL": f"sqlite:///{root / 'dealer.db'}",
                    "DEALER_INBOX": f"dir:{root / 'inbox'}", "DEALER_PUBLISH": f"dir:{root / 'outbox'}",
                    "DEALER_WEBHOOK_LISTEN": f"127.0.0.1:{self.port}", "DEALER_WEBHOOK_SECRET": SECRET,
                    "DEALER_DISCOURSE_WEBHOOK_SECRET": "discourse-secret", "DEALER_POLL_INTERVAL": "0.2",
                    "DEALER_DEADLINE_OVERRIDES": ""}
        dealer = [str(Path(sys.executable).parent / "dealer")]
        for args in (["player", "add", "alice"], ["player", "add", "bob"]):
            subprocess.run(dealer + args, env=self.env, check=True, capture_output=True, timeout=60)
        self.log = open(root / "daemon.log", "wb")
        self.process = subprocess.Popen(dealer + ["run"], env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
                                        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE,
                                                                              (FILE_LIMIT, FILE_LIMIT)))
        deadline = time.monotonic() + 60
        while True:  # the endpoint is up once it accepts a connection
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise AssertionError("dealer run did not start: " + self.log_text())
                try:  # waits on the process: it may have ended with a message
                    self.process.wait(0.05)
                except subprocess.TimeoutExpired:
                    pass

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def descriptors(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def peak_rss(self) -> int:
        """The daemon's peak resident memory so far, in bytes (VmHWM)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmHWM")

    def log_text(self) -> str:
        self.log.flush()
        return (self.root / "daemon.log").read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.log.close()


@pytest.fixture
def daemon(_migrated_sqlite: Path, tmp_path: Path) -> Iterator[Daemon]:
    if not Path("/proc/self/fd").exists():
        pytest.skip("needs /proc to count the daemon's descriptors")
    started = Daemon(tmp_path, _migrated_sqlite)
    try:
        yield started
    finally:
        started.stop()


def signed_delivery(ident: str, body_text: str) -> tuple[dict[str, str], bytes]:
    now = datetime.now(timezone.utc).replace(microsecond=0)
    body = json.dumps({"id": ident, "sender": "alice", "channel": "pm", "body": body_text,
                       "sent_at": now.isoformat().replace("+00:00", "Z")}).encode()
    stamp = str(int(time.time()))
    return {"X-Dealer-Timestamp": stamp, "X-Dealer-Delivery": ident,
            "X-Dealer-Signature": sign(SECRET, stamp, ident, body)}, body


def replies_to(root: Path, recipient: str) -> list[dict[str, object]]:
    posts = [json.loads(p.read_text()) for p in sorted((root / "outbox").glob("*.json"))]
    return [p for p in posts if p.get("recipient") == recipient]


def wait_for(check, seconds: float, poll) -> bool:  # type: ignore[no-untyped-def]
    """``check()`` true within ``seconds``; ``poll()`` is what waits between two looks (a
    request to the daemon: no bare sleep)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        poll()
    return bool(check())


def test_slow_clients_leave_passes_and_signed_webhooks_working(daemon: Daemon) -> None:
    slow: list[socket.socket] = []
    started = time.monotonic()
    try:
        for _ in range(SLOW_CLIENTS):
            if time.monotonic() - started > 60:
                break
            client = socket.socket()
            client.settimeout(5)
            try:
                client.connect(("127.0.0.1", daemon.port))
                client.sendall(b"POST /inbox HTTP/1.1\r\nHost: dealer\r\nX-Slow: ")
            except OSError:
                client.close()
                continue
            slow.append(client)
        assert len(slow) >= SLOW_CLIENTS * 0.9, f"only {len(slow)} slow clients connected"
        held = daemon.descriptors()
        # Signed webhooks go through at once, each on a new connection.
        for number in range(5):
            headers, body = signed_delivery(f"w{number}", "help")
            answer = httpx.post(daemon.url("/inbox"), content=body, headers=headers, timeout=10)
            assert answer.status_code == 202, answer.text
        # The loop's passes go on: a file dropped in the inbox is answered too.
        (daemon.root / "inbox" / "file.json").write_text(json.dumps(
            {"id": "f1", "sender": "bob", "channel": "pm", "body": "help",
             "sent_at": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")}))
        answered = wait_for(lambda: replies_to(daemon.root, "bob") and len(replies_to(daemon.root, "alice")) >= 5,
                            30, lambda: httpx.get(daemon.url("/nothing"), timeout=5))
        assert answered, daemon.log_text()[-3000:]
        assert daemon.process.poll() is None
        assert held < 300, f"the daemon held {held} descriptors with {len(slow)} slow clients"
    finally:
        for client in slow:
            client.close()
    log = daemon.log_text()
    assert "Too many open files" not in log
    assert len(log) < 64 * 1024, f"{len(log)} bytes of log: {log[-2000:]}"


def send_large(port: int, head: bytes, chunked: bool) -> tuple[int, bytes]:
    """Send ``head`` then up to :data:`BODY` bytes from a generator until the daemon stops
    reading; return how many body bytes went out and what the daemon answered."""
    def chunks() -> Iterator[bytes]:
        block = b"x" * (64 * 1024)
        for _ in range(BODY // len(block)):
            yield (b"10000\r\n" + block + b"\r\n") if chunked else block

    sent = 0
    client = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        client.sendall(head)
        try:
            for chunk in chunks():
                client.sendall(chunk)
                sent += len(chunk)
        except OSError:  # the daemon answered and closed: the sender must stop
            pass
        try:
            answer = client.recv(4096)
        except OSError:
            answer = b""
    finally:
        client.close()
    return sent, answer


def test_a_400_mb_post_is_refused_before_it_is_read(daemon: Daemon) -> None:
    before = daemon.peak_rss()
    with_length = (b"POST /discourse HTTP/1.1\r\nHost: dealer\r\nContent-Type: application/json\r\n"
                   b"Content-Length: " + str(BODY).encode() + b"\r\n\r\n")
    sent, answer = send_large(daemon.port, with_length, chunked=False)
    assert sent < 64 * MB, f"{sent} bytes went out before the daemon stopped reading"
    assert answer == b"" or answer.startswith(b"HTTP/1.1 413")
    without_length = (b"POST /discourse HTTP/1.1\r\nHost: dealer\r\nContent-Type: application/json\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n")
    sent, answer = send_large(daemon.port, without_length, chunked=True)
    assert sent < 64 * MB, f"{sent} bytes went out before the daemon stopped reading"
    assert answer == b"" or answer.startswith(b"HTTP/1.1 413")
    # The same through /inbox, whose cap is DEALER_MAX_MESSAGE_BYTES.
    sent, _ = send_large(daemon.port, with_length.replace(b"/discourse", b"/inbox"), chunked=False)
    assert sent < 64 * MB
    grown = daemon.peak_rss() - before
    assert grown < 20 * MB, f"the daemon's peak RSS grew by {grown / MB:.1f} MiB"
    # The endpoint still answers a well-formed request.
    headers, body = signed_delivery("after", "help")
    assert httpx.post(daemon.url("/inbox"), content=body, headers=headers, timeout=10).status_code == 202


def test_the_unit_leaves_the_daemon_descriptors_beyond_the_endpoints_cap() -> None:
    import re

    from dealer.settings import Settings

    unit = (Path(__file__).parents[2] / "deploy" / "dealer.service").read_text(encoding="utf-8")
    found = re.search(r"^LimitNOFILE=(\d+)$", unit, re.MULTILINE)
    assert found, "the unit sets no LimitNOFILE"
    cap = Settings.model_fields["webhook_max_connections"].default
    assert int(found.group(1)) >= 10 * cap
