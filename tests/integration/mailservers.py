"""Real mail servers for the e-mail tests: aiosmtpd (an SMTP server in the test process)
and dovecot (an IMAP server, installed by .ci/run from the distribution's packages, run
here in a throw-away folder with a throw-away user and maildir).

Without dovecot on the machine the IMAP tests are skipped, except when
``DEALER_TEST_REQUIRE_TOOLS`` is set (``.ci/run`` sets it), where its absence fails them: CI
must never pass without having run them.
"""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any, Iterator

import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Received:
    """Mails an SMTP server took, in order."""

    mails: list[EmailMessage] = field(default_factory=list)
    envelopes: list[tuple[str, list[str]]] = field(default_factory=list)
    refuse_next: list[str] = field(default_factory=list)
    """SMTP replies to give to the next DATA commands instead of taking the mail."""

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.refuse_next:
            return self.refuse_next.pop(0)
        self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        self.mails.append(message_from_bytes(envelope.content, policy=policy.default))  # type: ignore[arg-type]
        return "250 OK"


@dataclass
class SmtpServer:
    host: str
    port: int
    received: Received
    tls_context: ssl.SSLContext | None = None
    """The client's context trusting the server's certificate (TLS servers)."""


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate and key for ``localhost`` made with the openssl command."""
    if shutil.which("openssl") is None:
        if os.environ.get("DEALER_TEST_REQUIRE_TOOLS"):  # .ci/run: never pass without it
            pytest.fail("openssl is not installed (apt-get install openssl)")
        pytest.skip("openssl is not installed")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True,
    )
    return cert, key


def start_smtp(mode: str, folder: Path) -> tuple[Any, SmtpServer]:
    """An aiosmtpd server: ``none`` (plain), ``starttls`` (STARTTLS required) or ``tls``."""
    from aiosmtpd.controller import Controller

    received = Received()
    port = free_port()
    client_context = None
    kwargs: dict[str, Any] = {}
    if mode != "none":
        cert, key = self_signed(folder)
        server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_context.load_cert_chain(cert, key)
        client_context = ssl.create_default_context(cafile=str(cert))
        if mode == "starttls":
            kwargs = {"tls_context": server_context, "require_starttls": True}
        else:
            kwargs = {"ssl_context": server_context}
    controller = Controller(received, hostname="127.0.0.1", port=port, **kwargs)
    if mode == "tls":
        # The controller's own readiness check speaks plain SMTP; for implicit TLS it is
        # told which context to use.
        controller.ssl_context = kwargs["ssl_context"]
    controller.start()
    return controller, SmtpServer("127.0.0.1", port, received, client_context)


@pytest.fixture
def smtp_server(tmp_path: Path) -> Iterator[SmtpServer]:
    controller, server = start_smtp("none", tmp_path)
    yield server
    controller.stop()


# -- dovecot --------------------------------------------------------------------------------

DOVECOT_USER = "dealer"
DOVECOT_PASSWORD = "throwaway-password"

_CONFIG = """\
protocols = imap
listen = 127.0.0.1
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {root}/passwd
}}
userdb {{
  driver = static
  args = uid={uid} gid={gid} home={root}/home/%u
}}
mail_location = maildir:~/Maildir
# IDLE hears of a new mail through inotify; where the machine has run out of inotify
# instances (many servers at once), dovecot checks every interval instead: keep it short.
mailbox_idle_check_interval = 1 secs
# The fault runs' daemons connect again after each kill, before the server has seen the
# killed one's connections go: more than the default 10 at once from one user and address.
protocol imap {{
  mail_max_userip_connections = 200
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service stats {{
  unix_listener stats-reader {{
    mode = 0666
  }}
  unix_listener stats-writer {{
    mode = 0666
  }}
}}
"""


@dataclass
class Dovecot:
    host: str
    port: int
    user: str
    password: str
    config: Path | None = None
    """Its configuration file (``doveadm -c CONFIG``)."""

    def client(self) -> Any:
        from imapclient import IMAPClient

        client = IMAPClient(self.host, self.port, ssl=False, timeout=10)
        client.login(self.user, self.password)
        return client

    def new_folder(self) -> str:
        """A fresh folder for one test (the server is shared by the session)."""
        name = f"t{uuid.uuid4().hex[:12]}"
        client = self.client()
        client.create_folder(name)
        client.logout()
        return name

    def deliver(self, folder: str, raw: bytes) -> None:
        """Put a mail into ``folder`` as a mail server would (IMAP APPEND, unseen)."""
        client = self.client()
        client.append(folder, raw)
        client.logout()

    def flags(self, folder: str) -> list[tuple[bytes, ...]]:
        """Each mail's flags, in order."""
        client = self.client()
        client.select_folder(folder, readonly=True)
        uids = client.search(["ALL"])
        flags = client.get_flags(uids) if uids else {}
        client.logout()
        return [tuple(sorted(flags[uid])) for uid in uids]


def dovecot_binary() -> str | None:
    return shutil.which("dovecot") or next(
        (p for p in ("/usr/sbin/dovecot", "/usr/local/sbin/dovecot") if os.path.exists(p)), None)


def start_dovecot(binary: str) -> tuple[Dovecot, Any]:
    """Run dovecot in a throw-away folder; return the server and a function that stops it
    (and removes the folder). :class:`RuntimeError` when it does not start."""
    # Not under pytest's temporary folder: its parents are closed to the unprivileged users
    # dovecot's processes run as.
    root = Path(tempfile.mkdtemp(prefix="dealer-dovecot-"))
    os.chmod(root, 0o755)
    for sub in ("run", "state", "home"):
        (root / sub).mkdir()
    # The mail files belong to an unprivileged user (dovecot refuses root for mail).
    uid, gid = (65534, 65534) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    if os.geteuid() == 0:
        os.chown(root / "home", uid, gid)
    (root / "passwd").write_text(f"{DOVECOT_USER}:{{PLAIN}}{DOVECOT_PASSWORD}::::::\n", encoding="utf-8")
    port = free_port()
    config = root / "dovecot.conf"
    config.write_text(_CONFIG.format(root=root, port=port, uid=uid, gid=gid), encoding="utf-8")
    process = subprocess.Popen([binary, "-F", "-c", str(config)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    server = Dovecot("127.0.0.1", port, DOVECOT_USER, DOVECOT_PASSWORD, config)

    def stop() -> None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(root, ignore_errors=True)

    for _ in range(100):
        if process.poll() is not None:
            output = process.stdout.read().decode("utf-8", "replace") if process.stdout else ""
            log = (root / "dovecot.log").read_text(errors="replace") if (root / "dovecot.log").exists() else ""
            stop()
            raise RuntimeError(f"dovecot did not start: {output} {log}")
        try:
            server.client().logout()
            return server, stop
        except OSError:
            time.sleep(0.05)  # the server starting up, not a test waiting on a clock
    stop()
    raise RuntimeError("dovecot did not answer within 5 s")


@pytest.fixture(scope="session")
def dovecot() -> Iterator[Dovecot]:
    binary = dovecot_binary()
    if binary is None:
        if os.environ.get("DEALER_TEST_REQUIRE_TOOLS"):
            pytest.fail("dovecot is not installed: .ci/run installs dovecot-imapd")
        pytest.skip("dovecot is not installed (apt-get install dovecot-imapd)")
    try:
        server, stop = start_dovecot(binary)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        stop()
