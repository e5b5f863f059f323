"""How the season's players reach the daemon: the directory inbox and the signed webhook.

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
        self.lock = threading.Lock()

    def user(self, player: str) -> int:
        """The Discord user id of ``player`` (made known to the fake)."""
        if player not in self.users:
            self.users[player] = self.FIRST_USER + len(self.users)
            self.fake.add_user(self.users[player], player, player)
        return self.users[player]

    def routes(self, default: str) -> str:
        """``DEALER_ROUTES``: the game channels and PMs on Discord, the rest to ``default``."""
        return ";".join([*(f"{name}={'discord:channel/' + str(i)}" for name, i in self.channels.items()),
                         "pm=discord:dm", f"*={default}"])

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
        return True

    def close(self) -> None:
        self.fake.stop()
