"""How the season's players reach the daemon: the directory inbox, the signed webhook,
Discord and e-mail.

Each transport takes a whole inbox message (the directory inbox's JSON: README, "The inbox
and the outbox") and records its id once handed over; a message is handed over once, never
lost: a file is written under a hidden name and renamed into the inbox; a webhook request is
sent again (with a new delivery id) until a daemon answers 202, to whichever replica is up,
as a bridge would.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from dealer.shell.webhooks import sign

SECRET = "season-webhook-secret"


@dataclass
class Sent:
    """What the runner handed over, by transport: the message ids each took."""

    ids: dict[str, list[str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, source: str, ident: str) -> None:
        with self.lock:
            self.ids.setdefault(source, []).append(ident)

    def all(self) -> dict[str, list[str]]:
        with self.lock:
            return {source: list(ids) for source, ids in self.ids.items()}


class Directory:
    """The directory inbox (``DEALER_INBOX=dir:...``): one file a message, renamed in whole."""

    source = "dir"

    def __init__(self, inbox: Path, sent: Sent):
        self.inbox = inbox
        self.sent = sent

    def deliver(self, message: dict[str, Any]) -> None:
        ident = message["id"]
        temporary = self.inbox / f".{ident}.tmp"
        temporary.write_text(json.dumps(message), encoding="utf-8")
        os.replace(temporary, self.inbox / f"{ident}.json")
        self.sent.add(self.source, ident)

    def idle(self) -> bool:
        return True

    def close(self) -> None:
        pass


class Webhook(threading.Thread):
    """The signed webhook (``POST /inbox``) of the replicas' endpoints, from a thread: each
    message is sent until one replica stores it (202), trying the ports in turn; a daemon
    down (killed, or the day of downtime) only delays it."""

    source = "webhook"

    def __init__(self, ports: list[int], sent: Sent, secret: str = SECRET):
        super().__init__(name="webhook-sender", daemon=True)
        self.ports = ports
        self.sent = sent
        self.secret = secret
        self.queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.busy = threading.Event()
        self.retries = 0
        self.answers: dict[str, int] = {}
        self.refused: list[str] = []
        self.client = httpx.Client(timeout=10.0)
        self.turn = 0

    def deliver(self, message: dict[str, Any]) -> None:
        self.busy.set()
        self.queue.put(message)

    def idle(self) -> bool:
        return self.queue.empty() and not self.busy.is_set()

    def run(self) -> None:
        while True:
            message = self.queue.get()
            if message is None:
                return
            self.busy.set()
            self._send(message)
            if self.queue.empty():
                self.busy.clear()

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode("utf-8")
        while True:
            port = self.ports[self.turn % len(self.ports)]
            self.turn += 1
            stamp, delivery = str(int(time.time())), uuid.uuid4().hex
            headers = {"X-Dealer-Timestamp": stamp, "X-Dealer-Delivery": delivery,
                       "X-Dealer-Signature": sign(self.secret, stamp, delivery, body),
                       "Content-Type": "application/json"}
            try:
                answer = self.client.post(f"http://127.0.0.1:{port}/inbox", content=body,
                                          headers=headers)
            except httpx.HTTPError:
                answer = None
            if answer is not None and answer.status_code == 202:
                stored = answer.json().get("stored", "?")
                self.answers[stored] = self.answers.get(stored, 0) + 1
                self.sent.add(self.source, message["id"])
                return
            if answer is not None and answer.status_code != 503:
                # Not a transient answer: the books report it (the message was not stored).
                self.refused.append(f"{message['id']}: {answer.status_code} {answer.text[:200]}")
                return
            self.retries += 1
            time.sleep(0.05 if self.turn % len(self.ports) else 0.25)

    def close(self) -> None:
        self.queue.put(None)
        self.join(timeout=60)
        self.client.close()


class Discord:
    """Discord (``tests/integration/fake_discord.py``, the project's fake of its gateway and REST
    API, rate limits and 429s included): a player's channel post or PM is a Discord user's
    message, heard by the daemons' gateway (or read back by their catch-up after a kill); the
    games' posts and replies come back over REST. A PM names its game on a ``game ID`` first
    line, as a player writes it. What a Discord player does that is not a message (an edit,
    a reaction) goes over ``fallback``: the season's players only write."""

    source = "discord"
    RACEWAY = 111111111111111111
    FIRST_USER = 210000000000000001

    def __init__(self, sent: Sent, channels: dict[str, int] | None = None):
        import sys

        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "integration"))
        from fake_discord import FakeDiscord

        self.sent = sent
        # Discord's route buckets, tightened: a channel takes 5 posts a second, so a busy
        # moment gets 429s and the publisher waits them out.
        self.fake = FakeDiscord(limit=5, window=1.0).start()
        self.channels = channels or {"#the-raceway": self.RACEWAY}
        for channel in self.channels.values():
            self.fake.add_channel(channel)
        self.users: dict[str, int] = {}
        self.where: dict[str, str] = {}
        """Each message said: its channel and time (for the books' problems)."""
        self.fallback: Any = None
        self.engine: Any = None
        """The store, which :meth:`idle` reads (set by the season)."""
        self.lock = threading.Lock()

    def user(self, player: str) -> int:
        """The Discord user id of ``player`` (made known to the fake)."""
        if player not in self.users:
            self.users[player] = self.FIRST_USER + len(self.users)
            self.fake.add_user(self.users[player], player, player)
        return self.users[player]

    def routes(self) -> list[str]:
        """``DEALER_ROUTES``' entries for Discord: the game channels (PMs: ``discord:dm``)."""
        return [f"{name}={'discord:channel/' + str(i)}" for name, i in self.channels.items()]

    def deliver(self, message: dict[str, Any]) -> None:
        if message.get("kind", "message") != "message" or (
                message["channel"] != "pm" and message["channel"] not in self.channels):
            self.fallback.deliver(message)
            return
        user = self.user(message["sender"])
        with self.lock:  # the fake's ids and channels are not for two threads at once
            if message["channel"] == "pm":
                said = self.fake.user_says(None, user, f"game {message['game']}\n{message['body']}",
                                           dm=True)
            else:
                said = self.fake.user_says(self.channels[message["channel"]], user, message["body"])
        self.where[said["id"]] = f"{message['channel']} at {said['timestamp'][11:23]}"
        self.sent.add(self.source, said["id"])

    def connected(self, timeout: float) -> bool:
        return self.fake.connected.wait(timeout)

    def listened(self, engine: Any) -> bool:
        """Whether a daemon's catch-up has set every channel's cursor (what is said from then
        on is read back after a kill)."""
        from dealer.store import queries as Q

        with engine.connect() as connection:
            return all(Q.cursor(connection, "discord", f"channel/{i}") is not None
                       for i in self.channels.values())

    def bot_messages(self) -> list[dict[str, Any]]:
        """Every message the bot posted, in a channel or a DM."""
        from fake_discord import BOT_ID

        return [m for messages in list(self.fake.channels.values()) for m in list(messages)
                if m["author"]["id"] == str(BOT_ID)]

    def rate_limited(self) -> int:
        """How many of the daemons' REST requests the fake answered 429."""
        return sum(1 for r in list(self.fake.requests) if r.status == 429)

    def idle(self) -> bool:
        """Every message said is stored: one said while no daemon listened waits for a
        catch-up, and the season's drain for it."""
        if self.engine is None or not self.where:
            return True
        from sqlalchemy import select

        from dealer.store.models import Inbound

        with self.engine.connect() as connection:
            stored = set(connection.execute(select(Inbound.external_id)
                                            .where(Inbound.source == self.source)).scalars())
        return set(self.where) <= stored

    def close(self) -> None:
        self.fake.stop()


class Mail(threading.Thread):
    """E-mail (docs/EMAIL.md) against the project's test servers (tests/integration/mailservers.py):
    a player's PM is a mail from ``NAME@players.test``, signed with DKIM as the tests sign
    (mailsign.py; the daemons find its key through ``FAULTRUN_DKIM``, faults/daemon.py) and
    put into dovecot's ``INBOX`` as a mail server would (IMAP APPEND, from a thread, again
    after a cut until it is in); the daemons read that one folder (``DEALER_INBOX=imap:``:
    nothing is expunged and a mail is stored once by its ``Message-ID``, whoever reads it
    first). Their replies and the players' private posts come back over SMTP to an aiosmtpd
    server here, which writes each mail it takes into the send log as the fork server writes
    a directory post (``PID POST-ID KEY``: the sender's ``X-Faultrun-Send`` header), so the
    books tell a re-send after a kill from a double. Faults: the IMAP connections cut
    (``doveadm kick``) every few seconds, SMTP sessions cut at ``RCPT`` or refused at
    ``DATA`` (451) now and then, never once a mail is taken, and every mail refused while
    the ``outage`` file (the season's publisher outage) exists. What a mail cannot carry (a
    channel post, an edit, a reaction) goes over ``fallback``."""

    source = "email"
    DOMAIN = "players.test"
    DEALER = "dealer@season.test"

    def __init__(self, sent: Sent, send_log: Path, seed: int, cut_every: float | None,
                 outage: Path, refuse_share: float = 0.03):
        import random
        import sys

        super().__init__(name="mail-sender", daemon=True)
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "integration"))
        import mailservers
        import mailsign

        binary = mailservers.dovecot_binary()
        if binary is None:
            raise RuntimeError("e-mail needs dovecot (apt-get install dovecot-imapd), or --no-email")
        self.sign = mailsign.sign
        self.record = f"v=DKIM1; k=rsa; p={mailsign.key_pair()[1]}"
        self.selector = mailsign.SELECTOR
        self.dovecot, self._stop_dovecot = mailservers.start_dovecot(binary)
        self.sent = sent
        self.log = os.open(send_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.rng = random.Random(seed)
        self.refuse_share = refuse_share
        self.outage = outage
        self.cut_every = cut_every
        self.queue: queue.Queue[bytes | None] = queue.Queue()
        self.busy = threading.Event()
        self.fallback: Any = None
        self.kept: list[tuple[str, tuple[bytes, ...]]] = []
        """The folder as the season left it (:meth:`close`): each mail's id and flags."""
        self.received: list[dict[str, str]] = []
        """Every mail the SMTP server took: its To, key, In-Reply-To and sender's pid."""
        self.smtp_cuts = self.smtp_refusals = self.imap_cuts = self.appends_again = self.out = 0
        self.halt = threading.Event()
        self.smtp = self._start_smtp()
        self._checker: Any = None
        self.cutter = threading.Thread(target=self._cut, name="imap-cutter", daemon=True)

    # -- set-up -----------------------------------------------------------------------------

    def address(self, player: str) -> str:
        return f"{player}@{self.DOMAIN}"

    def dkim_records(self) -> dict[str, str]:
        """``FAULTRUN_DKIM``'s TXT records: the players' domain's key."""
        return {f"{self.selector}._domainkey.{self.DOMAIN}.": self.record}

    def env(self) -> dict[str, str]:
        """The daemons' settings for this mail: the IMAP folder in, SMTP out."""
        d = self.dovecot
        return {"DEALER_INBOX": f"imap:{d.host}:{d.port}", "DEALER_IMAP_USER": d.user,
                "DEALER_IMAP_PASSWORD": d.password, "DEALER_IMAP_SECURITY": "none",
                "DEALER_IMAP_FOLDER": "INBOX", "DEALER_EMAIL_AUTH": "on", "DEALER_EMAIL_AUTHSERV_ID": "",
                "DEALER_SMTP_SERVER": f"127.0.0.1:{self.smtp_port}", "DEALER_SMTP_SECURITY": "none",
                "DEALER_EMAIL_FROM": self.DEALER, "DEALER_EMAIL_LIST": ""}

    def _start_smtp(self) -> Any:
        from aiosmtpd.controller import Controller

        transport = self

        class Handler:
            async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str,
                                  options: list[str]) -> str:
                if transport.outage.exists():  # the season's publisher outage
                    transport.out += 1
                    return "451 4.3.2 the season's mail server is out"
                if transport.rng.random() < transport.refuse_share:
                    transport.smtp_cuts += 1
                    server.transport.close()  # a cut connection: nothing was taken
                    return "421 4.4.2 the season cuts this connection"
                envelope.rcpt_tos.append(address)
                return "250 OK"

            async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
                if transport.rng.random() < transport.refuse_share:
                    transport.smtp_refusals += 1
                    return "451 4.3.0 the season refuses this mail for now"
                transport._took(envelope.content)
                return "250 OK"

        import mailservers  # on sys.path since __init__

        self.smtp_port = mailservers.free_port()
        controller = Controller(Handler(), hostname="127.0.0.1", port=self.smtp_port)
        controller.start()
        return controller

    def _took(self, content: bytes) -> None:
        """A mail taken: kept, and its send written in the send log (before the 250 goes back)."""
        from email import message_from_bytes, policy

        mail = message_from_bytes(content, policy=policy.default)
        pid, _, post_id = str(mail.get("X-Faultrun-Send", "? ?")).partition(" ")
        key = str(mail.get("X-Dealer-Post", ""))
        os.write(self.log, f"{pid} {post_id} {key}\n".encode("utf-8"))
        self.received.append({"to": str(mail["To"]), "key": key, "pid": pid,
                              "in_reply_to": str(mail.get("In-Reply-To", "")),
                              "message_id": str(mail["Message-ID"])})

    def start(self) -> None:
        super().start()
        if self.cut_every:
            self.cutter.start()

    # -- the players' mails -------------------------------------------------------------------

    def deliver(self, message: dict[str, Any]) -> None:
        if message.get("kind", "message") != "message" or message["channel"] != "pm":
            self.fallback.deliver(message)
            return
        from email.utils import format_datetime

        from dealer.clock import parse_time

        ident = f"{message['id']}@{self.DOMAIN}"
        body = f"game {message['game']}\n{message['body']}"
        sender = self.address(message["sender"])
        raw = (f"From: {message['sender']} <{sender}>\r\nTo: {self.DEALER}\r\n"
               f"Subject: game {message['game']}\r\nMessage-ID: <{ident}>\r\n"
               f"Date: {format_datetime(parse_time(message['sent_at']).replace(microsecond=0))}\r\n"
               "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n"
               "Content-Transfer-Encoding: 8bit\r\n\r\n" + body.replace("\n", "\r\n") + "\r\n"
               ).encode("utf-8")
        self.busy.set()
        self.queue.put(self.sign(raw, self.DOMAIN))

    def run(self) -> None:
        client = None
        while True:
            raw = self.queue.get()
            if raw is None:
                return
            self.busy.set()
            tries = 0
            while True:
                try:
                    client = client or self.dovecot.client()
                    client.append("INBOX", raw)
                    break
                except Exception:  # a cut (or the server busy): in again, as a mail server retries
                    client = None
                    tries += 1
                    self.appends_again += 1
                    time.sleep(0.05 * min(tries, 10))
            ident = raw.split(b"Message-ID: <", 1)[1].split(b">", 1)[0].decode()
            self.sent.add(self.source, ident)
            if self.queue.empty():
                self.busy.clear()

    def _cut(self) -> None:
        import subprocess

        assert self.cut_every
        while not self.halt.wait(self.rng.uniform(0.5, 1.5) * self.cut_every):
            done = subprocess.run(["doveadm", "-c", str(self.dovecot.config), "kick", self.dovecot.user],
                                  capture_output=True, text=True)
            if done.returncode == 0:
                self.imap_cuts += 1

    def stop_faults(self) -> None:
        """No more cuts, refusals or kicks (the drain runs clean)."""
        self.halt.set()
        self.refuse_share = 0.0

    # -- the books' reads ---------------------------------------------------------------------

    def folder(self) -> list[tuple[str, tuple[bytes, ...]]]:
        """Every mail in the folder: its ``Message-ID`` and flags."""
        client = self.dovecot.client()
        try:
            client.select_folder("INBOX", readonly=True)
            uids = client.search(["ALL"])
            data = client.fetch(uids, ["FLAGS", "BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"]) if uids else {}
        finally:
            client.logout()
        found = []
        for uid in uids:
            head = data[uid][b"BODY[HEADER.FIELDS (MESSAGE-ID)]"].decode("ascii", "replace")
            ident = head.partition("<")[2].partition(">")[0]
            found.append((ident, tuple(sorted(data[uid][b"FLAGS"]))))
        return found

    def idle(self) -> bool:
        """Every mail handed over is in the folder, and the daemons have read them all."""
        if not (self.queue.empty() and not self.busy.is_set()):
            return False
        try:
            if self._checker is None:
                self._checker = self.dovecot.client()
            self._checker.select_folder("INBOX", readonly=True)
            return not self._checker.search(["UNSEEN"])
        except Exception:
            self._checker = None
            return False

    def close(self) -> None:
        self.stop_faults()
        self.queue.put(None)
        self.join(timeout=60)
        if self._checker is not None:
            try:
                self._checker.logout()
            except Exception:
                pass
        self.smtp.stop()
        os.close(self.log)
        try:
            self.kept = self.folder()
        finally:
            self._stop_dovecot()
