"""A daemon wired to the fake Discord (tests/integration/fake_discord.py): the gateway through discord.py,
posts through the REST publisher, the store real, game time controlled.

Two clocks: ``game`` is the time the daemon acts at and the fake stamps new messages with
(their snowflakes, so ``sent_at``); ``Ticks`` is the seconds clock of the rate limits, shared
by the fake and the publisher, whose waits advance it (nothing sleeps). The gateway itself
runs in real time in its thread; a test waits for what it hears to be stored
(:meth:`DiscordTable.stored`), on an event, never a sleep.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator

from sqlalchemy import select

from fake_discord import FakeDiscord
from dealer.inbox.memory import MemoryInbox
from dealer.publish.discord import DiscordRest
from dealer.settings import Settings
from dealer.shell.admin import add_player, link_account
from dealer.shell.passes import Dealer
from dealer.shell.platforms import DiscordLink, build_publisher
from dealer.store.models import Inbound

RACEWAY = 111111111111111111
ACTIONS = 111111111111111112


class Ticks:
    """A seconds clock that only moves when something waits on it."""

    def __init__(self) -> None:
        self.t = 1000.0
        self.slept: list[float] = []
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.slept.append(seconds)
            self.t += seconds


class DiscordTable:
    """The fake Discord, a daemon on ``database_url`` routed to it, and its gateway link."""

    def __init__(self, database_url: str, root: Path, start: datetime, *, limit: int = 5,
                 window: float = 5.0, routes: str | None = None, connect: bool = True, **settings: Any):
        self.now = start
        self.ticks = Ticks()
        self.fake = FakeDiscord(limit=limit, window=window, clock=self.ticks, now=lambda: self.now).start()
        self.fake.add_channel(RACEWAY)
        self.fake.add_channel(ACTIONS)
        self.settings = Settings(
            home=str(root), database_url=database_url, inbox=f"dir:{root / 'inbox'}",
            publish=f"dir:{root / 'outbox'}",
            routes=routes if routes is not None else
            f"#the-raceway=discord:channel/{RACEWAY};#game-actions=discord:channel/{ACTIONS};pm=discord:dm",
            discord_token="fake-token", discord_api_url=self.fake.api_url,
            discord_gateway_url=self.fake.gateway_url, _env_file=None, **settings,
        )
        self.rest = DiscordRest("fake-token", api_url=self.fake.api_url, rate=1000.0,
                                clock=self.ticks, sleep=self.ticks.sleep)
        self.dealer = Dealer(self.settings, inbox=MemoryInbox(), publisher=build_publisher(self.settings, self.rest),
                             clock=lambda: self.now)
        self.link: DiscordLink | None = None
        if connect:
            self.connect()

    def connect(self, first_catch_up: bool = True, **options: Any) -> None:
        """Start the gateway link (``options`` for :class:`DiscordLink`); wait for its first catch-up."""
        self.link = DiscordLink(self.settings, self.dealer.engine, self.dealer.wake, clock=lambda: self.now,
                                rest=DiscordRest("fake-token", api_url=self.fake.api_url),
                                guild_ready_timeout=0.01, **options)
        self.link.start()
        if first_catch_up:
            self.until(lambda: self.link.catch_ups >= 1, "the gateway's first catch-up")

    def until(self, condition: Any, what: str, timeout: float = 20.0) -> None:
        """Wait (on the daemon's wake event, never a bare sleep) until ``condition()``."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            self.dealer.wake.wait(0.05)
            self.dealer.wake.clear()

    def stored(self, external_id: str) -> Inbound:
        """Wait until the message ``external_id`` is stored; return its row."""
        found: list[Inbound] = []

        def check() -> bool:
            with self.dealer.sessions() as session:
                row = session.scalars(select(Inbound).where(Inbound.external_id == external_id)).first()
            if row is not None:
                found.append(row)
            return row is not None

        self.until(check, f"message {external_id} to be stored")
        return found[0]

    def stored_count(self, n: int) -> None:
        def check() -> bool:
            with self.dealer.sessions() as session:
                return len(session.scalars(select(Inbound.id)).all()) >= n
        self.until(check, f"{n} stored messages")

    def say(self, user: int, text: str, at: datetime, *, channel: int = RACEWAY, dm: bool = False) -> dict[str, Any]:
        """``user`` says ``text`` at ``at`` (in a channel, or in a DM); waits until stored."""
        self.now = at
        message = self.fake.user_says(None if dm else channel, user, text, dm=dm)
        self.stored(message["id"])
        return message

    def run(self, at: datetime) -> Any:
        self.now = at
        return self.dealer.run_pass(at)

    def admin(self, fn: Any) -> Any:
        with self.dealer.sessions.begin() as session:
            return fn(session)

    def close(self) -> None:
        if self.link is not None:
            self.link.stop()
        self.rest.close()
        self.fake.stop()
        self.dealer.engine.dispose()


def tables(database_url: str, root: Path, start: datetime, **defaults: Any) -> Iterator[Callable[..., DiscordTable]]:
    """A fixture's body: yield a maker of tables (``defaults`` overridden by its options), close them all after."""
    made: list[DiscordTable] = []

    def make(**options: Any) -> DiscordTable:
        t = DiscordTable(database_url, root, start, **{**defaults, **options})
        made.append(t)
        return t

    yield make
    for t in made:
        t.close()


def add_players(t: DiscordTable, at: datetime, names_ids: tuple[tuple[str, int], ...], chips: int) -> None:
    """Players ``(name, Discord user id)`` holding ``chips``, each linked to its user, who the fake knows."""
    def setup(session):  # type: ignore[no-untyped-def]
        for name, user in names_ids:
            add_player(session, name, at, chips=chips)
            link_account(session, name, f"discord:{user}", at)
    t.admin(setup)
    for name, user in names_ids:
        t.fake.add_user(user, name.lower(), name)
