"""The fault run's fork server: each life of the daemon is ``dealer run`` in a new process.

The fault run (``faultlib.py``) restarts the daemon hundreds of times. Importing dealer
takes about a second of CPU on a small machine, which would be most of each life and
would bound the number of kills a run can afford. So this process imports everything
``dealer run`` needs once, touches neither the store nor the inbox, and then forks one
child per life on request: the child is a new process with its own pid, which sets the
environment it was given (``DEALER_*``, ``DEALER_FAULT``, ``PGAPPNAME``), sends its output
to the replica's log and runs ``dealer run`` (``dealer.cli.main``) exactly as the console
script does. A SIGKILL ends it like any daemon; this server reaps it and reports how it
ended.

Protocol (one line each way, JSON in, text out). In: ``{"env": {...}, "log": PATH}``
starts a life; answered ``spawned PID``. Out, whenever a life ends: ``exit PID CODE``
(``-9`` for SIGKILL). End of input ends the server (the lives still running are left to
the caller).

With ``FAULTRUN_SEND_LOG=FILE`` in a life's environment, every post its directory
publisher writes is also recorded as one line ``PID POST-ID KEY`` appended to FILE
(``O_APPEND``: lines from two replicas never interleave), once the post's file is in
place, ``PID - committed`` once a delivery transaction (a batch of posts marked
delivered) has committed, and ``PID - rolled back`` when delivery ended by an error (a cut
connection), its batch in progress rolled back. The directory outbox itself cannot show a
post sent twice (a re-send rewrites the same file); the send log does, and says which
process sent it and what became of its batch: each send's is its sender's next mark (none
when the sender died first). With ``FAULTRUN_PASS_LOG=FILE``, ``PID started TIME`` is
appended to FILE as the life's loop begins (its start-up over), and ``PID TIME`` after each
turn of its loop (a pass over, its timer set; TIME in Unix seconds): the lives that
completed a pass, and when. With ``FAULTRUN_OUTAGE=FILE``, the directory publisher fails every
send while FILE exists (a publisher outage: the posts wait and go out after their backoff).
With ``FAULTRUN_DKIM=FILE`` (JSON: TXT records by name) the IMAP inbox looks DKIM keys up
there, not in DNS. Every mail the SMTP publisher sends carries ``X-Faultrun-Send: PID
POST-ID``, which the season's SMTP server writes into the send log as it takes the mail.

With ``"exec": true`` in the request, the child does not run dealer in the forked image:
it execs this script anew (``--life LOG``), which imports only what ``dealer run`` imports
under a supervisor (not ``PRELOADED``), and then runs the life the same way. A crash loop's
lives so pay their start.
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import os
import select
import signal
import sys
import time
import traceback

import dealer.cli
import dealer.shell.delivery
import dealer.shell.timers
from dealer.publish.base import DeliveryFailed, OutgoingPost
from dealer.publish.directory import DirectoryPublisher

PRELOADED = (
    "apscheduler.schedulers.background", "apscheduler.triggers.date",  # the timers' thread
    "dealer.games.exoptosis", "dealer.games.hall", "dealer.games.races", "dealer.games.roulette",
    "dealer.inbox.directory", "dealer.render", "dealer.shell.passes", "dealer.shell.pidfile",
)
"""What `dealer run` imports late: the fork server imports it once for every forked life."""
OPTIONAL = ("dealer.inbox.imap", "dealer.publish.smtp", "dealer.shell.mailing", "imapclient", "dkim")
"""The same, of e-mail (dealer-moderator[email]), when installed."""


def record_sends(path: str) -> None:
    """Append ``PID POST-ID KEY`` to ``path`` after each post the directory publisher writes,
    and each delivery batch's end (``PID - committed``, ``PID - rolled back``)."""
    log = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    send = DirectoryPublisher.send

    def send_and_record(self: DirectoryPublisher, post: OutgoingPost) -> str:
        name = send(self, post)
        os.write(log, f"{os.getpid()} {post.id} {post.key}\n".encode("utf-8"))
        return name

    DirectoryPublisher.send = send_and_record  # type: ignore[method-assign]
    # A mail is recorded by the server that takes it (the season's SMTP server): each one
    # names the life and the post that sent it.
    from dealer.publish.smtp import SmtpPublisher

    compose = SmtpPublisher.compose

    def compose_and_name(self: SmtpPublisher, post: OutgoingPost, list_address: str | None = None):  # type: ignore[no-untyped-def]
        mail = compose(self, post, list_address)
        mail["X-Faultrun-Send"] = f"{os.getpid()} {post.id}"
        return mail

    SmtpPublisher.compose = compose_and_name  # type: ignore[method-assign]
    fault = dealer.shell.delivery.fault

    def fault_and_record(point: str) -> None:
        if point == "after-delivered":  # reached right after the batch's commit
            os.write(log, f"{os.getpid()} - committed\n".encode("utf-8"))
        fault(point)

    dealer.shell.delivery.fault = fault_and_record  # type: ignore[assignment]
    deliver = dealer.shell.delivery.deliver

    def deliver_and_record(*args, **kwargs):  # type: ignore[no-untyped-def]
        try:
            return deliver(*args, **kwargs)
        except BaseException:
            # Out of deliver by an error (a cut connection, SIGTERM): its batch in progress
            # rolled back, its sends not marked.
            os.write(log, f"{os.getpid()} - rolled back\n".encode("utf-8"))
            raise

    dealer.shell.delivery.deliver = deliver_and_record  # type: ignore[assignment]


def outage_while(flag: str) -> None:
    """Fail every send of the directory publisher while the file ``flag`` exists."""
    send = DirectoryPublisher.send

    def send_unless_out(self: DirectoryPublisher, post: OutgoingPost) -> str:
        if os.path.exists(flag):
            raise DeliveryFailed("the publisher is out (the season's outage)")
        return send(self, post)

    DirectoryPublisher.send = send_unless_out  # type: ignore[method-assign]


def dkim_keys(path: str) -> None:
    """Answer the DKIM key lookups of the IMAP inbox from the JSON file ``path`` (TXT records
    by name), as the tests' DNS stub does (tests/integration/mailsign.py): the season's
    players sign their mails with a test key no real DNS publishes."""
    from dealer.inbox import mailauth

    with open(path, encoding="utf-8") as records_file:
        records = json.load(records_file)

    def lookup(name: bytes, timeout: float = mailauth.DNS_TIMEOUT) -> bytes | None:
        record = records.get(name.decode("ascii", "replace"))
        return record.encode("ascii") if record else None

    mailauth.CachedDns.__init__.__defaults__ = (lookup,)  # its ``lookup``: resolve_txt otherwise


def record_passes(path: str) -> None:
    """Append ``PID started TIME`` to ``path`` as the daemon's loop begins (its start-up over),
    and ``PID TIME`` after each turn of the loop (TIME: the Unix time, in seconds)."""
    log = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    one_turn = dealer.shell.timers.one_turn
    started = False

    def turn_and_record(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal started
        if not started:
            started = True
            os.write(log, f"{os.getpid()} started {time.time():.3f}\n".encode())
        one_turn(*args, **kwargs)
        os.write(log, f"{os.getpid()} {time.time():.3f}\n".encode())

    dealer.shell.timers.one_turn = turn_and_record  # type: ignore[assignment]


def life(env: dict[str, str], log: str) -> int:
    """In the child: become the daemon; return its exit code."""
    quiet = os.open(os.devnull, os.O_RDONLY)
    os.dup2(quiet, 0)
    out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.environ.clear()
    os.environ.update(env)
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 PID`: where is this life now
    if env.get("FAULTRUN_OUTAGE"):
        outage_while(env["FAULTRUN_OUTAGE"])
    if env.get("FAULTRUN_SEND_LOG"):
        record_sends(env["FAULTRUN_SEND_LOG"])
    if env.get("FAULTRUN_PASS_LOG"):
        record_passes(env["FAULTRUN_PASS_LOG"])
    if env.get("FAULTRUN_DKIM"):
        dkim_keys(env["FAULTRUN_DKIM"])
    try:
        dealer.cli.main(["run"], prog_name="dealer")
        return 0
    except SystemExit as end:
        return end.code if isinstance(end.code, int) else (0 if end.code is None else 1)
    except BaseException:
        traceback.print_exc()
        return 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def reap() -> None:
    """Report every life that ended."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        os.write(1, f"exit {pid} {os.waitstatus_to_exitcode(status)}\n".encode())


def serve() -> None:
    pending = b""
    while True:
        ready, _, _ = select.select([0], [], [], 0.005)
        reap()
        if not ready:
            continue
        chunk = os.read(0, 65536)
        if not chunk:
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            request = json.loads(line)
            pid = os.fork()
            if pid == 0:
                if request.get("exec"):
                    os.execve(sys.executable, [sys.executable, __file__, "--life", request["log"]],
                              request["env"])
                os._exit(life(request["env"], request["log"]))
            os.write(1, f"spawned {pid}\n".encode())


if __name__ == "__main__":
    if sys.argv[1:2] == ["--life"]:  # a life exec'd by the server: its environment is set
        os._exit(life(dict(os.environ), sys.argv[2]))
    for module in PRELOADED:
        importlib.import_module(module)
    for module in OPTIONAL:
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    serve()
