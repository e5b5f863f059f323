"""A pushing platform's glue with the store: the routes' publisher, storing what a gateway
hears, the catch-up after a reconnect, and the gateway beside ``dealer run``.

Every pushed message goes through :func:`store_heard`, once by its platform id, and wakes
the daemon. The catch-up reads each routed channel's history after its cursor, so a move
sent while disconnected counts when it was sent; a place with no cursor starts at the
first connection. What it cannot give back is listed in docs/DISCORD.md.
"""

from __future__ import annotations

import functools
import logging
import threading
from datetime import datetime
from typing import Any, Callable

from sqlalchemy.engine import Engine

from dealer.clock import utcnow
from dealer.extras import missing
from dealer.health import GATEWAYS
from dealer.inbox.base import InboxMessage
from dealer.publish import Publisher, open_publisher
from dealer.routes import Destination, RouteTable, parse_routes
from dealer.settings import Settings
from dealer.shell.admin import AdminError, register_account
from dealer.shell.ingest import Stored, store_messages
from dealer.shell.strangers import StrangerLimit
from dealer.store import queries as Q
from dealer.store.db import read_connection, session_factory
from dealer.text import command_lines

log = logging.getLogger(__name__)

SOURCE = "discord"
JOIN_WORDS = frozenset({"join", "sit"})
"""The join commands that register an unknown sender (``DEALER_REGISTER_UNKNOWN``)."""


def route_table(settings: Settings) -> RouteTable:
    """The routes in force (raises :class:`dealer.routes.BadRoute`)."""
    return parse_routes(settings.routes, settings.publish)


def discord_rest(settings: Settings, **options: Any) -> Any:
    """The Discord REST client of the settings (needs dealer-moderator[discord])."""
    from dealer.publish.discord import DiscordRest

    return DiscordRest(settings.discord_token, api_url=settings.discord_api_url,
                       rate=settings.discord_rate, **options)


def build_publisher(settings: Settings, rest: Any = None) -> Publisher:
    """The publisher of the settings: ``DEALER_PUBLISH``, or the routing publisher over ``DEALER_ROUTES``."""
    if not settings.routes.strip():
        return open_publisher(settings.publish, settings)
    from dealer.publish.routing import RoutingPublisher, make_transport

    table = route_table(settings)

    def discord() -> Publisher:
        from dealer.publish.discord import DiscordPublisher

        return DiscordPublisher(rest or discord_rest(settings), settings.discord_webhook_url)

    return RoutingPublisher(table, lambda d: make_transport(d, settings, discord))


def hears_discord(table: RouteTable) -> bool:
    """Whether a route makes dealer listen on Discord (a webhook only posts)."""
    return any(d.kind == "discord" and d.arg != "webhook" for d in table.routes.values())


def store_heard(
    engine: Engine, settings: Settings, messages: list[InboxMessage], places: dict[str, str],
    now: datetime, source: str = SOURCE, strangers: StrangerLimit | None = None,
    raws: dict[str, str] | None = None,
) -> Stored:
    """Store what a platform heard; return what was new. A deletion takes its sender from the
    message it deletes; ``strangers`` caps an unlinked account; ``raws`` gives a raw text."""
    kept: list[InboxMessage] = []
    with read_connection(engine) as connection:
        for message in messages:
            if message.kind == "delete":
                sender = Q.sender_of_message(connection, source, message.target or "")
                if sender is None:
                    continue  # a message dealer never stored: not dealer's to know of
                message = message.model_copy(update={"sender": sender})
            kept.append(message)
    if settings.register_unknown:
        _register(engine, kept, now)
    if strangers is not None:
        kept = _within_rate(engine, kept, strangers)
    stored = store_messages(engine, source, kept, now, raws)
    for message, why in stored.refused:
        log.warning("%s message %s not stored: %s", source, message.id, why)
    if places:
        with engine.begin() as connection:
            for place, position in places.items():
                Q.move_cursor(connection, source, place, position, now)
    return stored


def _within_rate(engine: Engine, messages: list[InboxMessage], strangers: StrangerLimit) -> list[InboxMessage]:
    """``messages`` less those of strangers past their rate (logged, not stored)."""
    accounts = {m.sender.partition(":")[2] for m in messages}
    with read_connection(engine) as connection:
        platform = messages[0].sender.partition(":")[0] if messages else ""
        linked = Q.linked_accounts_among(connection, platform, sorted(accounts))
    kept = []
    for message in messages:
        account = message.sender.partition(":")[2]
        if account in linked or strangers.allow(message.sender):
            kept.append(message)
        else:
            log.warning("%s message %s not stored: %s is linked to no player and sent more than %s "
                        "message(s) in %g s", message.sender.partition(":")[0], message.id,
                        message.sender, strangers.per_stranger, strangers.window)
    return kept


def _register(engine: Engine, messages: list[InboxMessage], now: datetime) -> None:
    """Make a player of each unknown account whose message is a join command."""
    sessions = session_factory(engine)
    for message in messages:
        platform, _, account_id = message.sender.partition(":")
        lines = command_lines(message.body) if message.kind == "message" else []
        if not lines or lines[0].split()[0].lower() not in JOIN_WORDS or not account_id.isdigit():
            continue
        with sessions.begin() as session:
            if Q.player_of_account(session, platform, account_id) is not None:
                continue
            try:
                name = register_account(session, message.sender_name or "", platform, account_id, now)
            except AdminError as exc:
                log.warning("%s could not be registered: %s", message.sender, exc)
                continue
        log.info("%s registered as player %s (DEALER_REGISTER_UNKNOWN)", message.sender, name)


def catch_up(engine: Engine, settings: Settings, rest: Any, table: RouteTable,
             now: datetime, bot_id: int | None = None) -> int:
    """Store each routed channel's (and known DM's) history after its cursor; return how many were new."""
    from dealer.inbox.discord import read_history, time_snowflake

    with read_connection(engine) as connection:
        known = Q.cursors(connection, SOURCE)
    start = str(time_snowflake(now))
    new = 0
    for channel_id in sorted(table.discord_channels()):
        place = f"channel/{channel_id}"
        if place not in known:
            with engine.begin() as connection:
                Q.move_cursor(connection, SOURCE, place, start, now)
            continue
        new += _catch_up_place(engine, settings, rest, table, str(channel_id), place, known[place], now,
                               bot_id, read_history, dm=False)
    pm = table.routes.get("pm")
    if pm is not None and pm.kind == "discord" and pm.arg == "dm":
        # The DMs of everyone who wrote to dealer before (a dm/ cursor), and of every
        # linked player since the last catch-up (``seen``): a DM channel is only known
        # once opened, so one is opened per such player.
        places = {p: pos for p, pos in known.items() if p.startswith("dm/")}
        if "seen" in known:
            with read_connection(engine) as connection:
                for user in Q.linked_accounts(connection, SOURCE):
                    places.setdefault(f"dm/{user}", known["seen"])
        for place, position in sorted(places.items()):
            channel_id = rest.open_dm(place[3:])
            new += _catch_up_place(engine, settings, rest, table, channel_id, place, position, now,
                                   bot_id, read_history, dm=True)
    with engine.begin() as connection:
        Q.move_cursor(connection, SOURCE, "seen", start, now)
    if new:
        log.info("Discord catch-up: %s message(s) sent while dealer was away", new)
    return new


def _catch_up_place(engine: Engine, settings: Settings, rest: Any, table: RouteTable, channel_id: str,
                    place: str, after: str, now: datetime, bot_id: int | None,
                    read: Callable[..., tuple[list[InboxMessage], str | None]], dm: bool) -> int:
    history = rest.history(channel_id, after)
    if not history:
        return 0
    found, last = read(history, table, bot_id, is_dm=dm)
    stored = store_heard(engine, settings, found, {place: last} if last else {}, now)
    return len(stored.new)


class DiscordLink:
    """Discord's inbound side for a daemon: the gateway thread, what it hears stored, the catch-up."""

    def __init__(self, settings: Settings, engine: Engine, wake: threading.Event | None = None,
                 clock: Callable[[], datetime] = utcnow, rest: Any = None,
                 guild_ready_timeout: float = 2.0, retry_first: float = 1.0) -> None:
        self.settings = settings
        self.retry_first = retry_first
        """Seconds before the first retry of a catch-up after a store failure, or of a gateway
        stopped by an error (then doubled)."""
        self.engine = engine
        self.wake = wake or threading.Event()
        self.clock = clock
        self.table = route_table(settings)
        self.rest = rest or discord_rest(settings)
        self.guild_ready_timeout = guild_ready_timeout
        self.events: Any = None
        self.gateway: Any = None
        self.catch_ups = 0
        self.heard = 0
        self.behind = True
        """True from each connection to its catch-up (a message heard before it must not move
        a cursor past those sent during the gap: discord.py's ready waits for the guilds), and
        while something heard could not be stored: cursors wait for a catch-up."""
        self._lock = threading.Lock()
        self._storing = threading.Lock()
        self.rewind: dict[str, int] = {}
        """Places whose cursor must go back before the next catch-up (a message heard there
        could not be stored)."""
        self._retry: threading.Timer | None = None
        self._retry_wait = 0.0
        self.down_since: datetime | None = None  # the gateway's first stop by an error, till connected
        self.strangers = StrangerLimit()
        """What the gateway hears of accounts linked to no player, limited."""

    def sink(self, messages: list[InboxMessage], places: dict[str, str]) -> None:
        """Store what the gateway heard and wake the daemon; while the store is down the cursors stop
        and a catch-up is retried until it succeeds: nothing is lost."""
        try:
            stored = self.store(messages, places)
        except Exception:
            log.exception("Discord: %s event(s) not stored now; a catch-up will read them again",
                          len(messages))
            with self._lock:
                # Another event may have moved a cursor past these: put it back before them.
                for place, position in places.items():
                    back = int(position) - 1
                    self.rewind[place] = min(self.rewind.get(place, back), back)
            self._fall_behind()
            return
        self.heard += len(stored.new)
        self.wake.set()

    def store(self, messages: list[InboxMessage], places: dict[str, str],
              raws: dict[str, str] | None = None) -> Stored:
        """:func:`store_heard` with the link's strangers, one event at a time; raises what the store raises."""
        with self._storing:
            return store_heard(self.engine, self.settings, messages, {} if self.behind else places,
                               self.clock(), strangers=self.strangers, raws=raws)

    def _fall_behind(self) -> None:
        """Keep the cursors where they are and retry the catch-up until it succeeds."""
        with self._lock:
            self.behind = True
            if self._retry is not None:
                return
            self._retry_wait = min(60.0, self._retry_wait * 2) if self._retry_wait else self.retry_first
            self._retry = threading.Timer(self._retry_wait, self._retry_catch_up)
            self._retry.daemon = True
            self._retry.start()

    def _retry_catch_up(self) -> None:
        with self._lock:
            self._retry = None
        if self.catch_up() is not None and not self.behind:
            self._retry_wait = 0.0

    def catch_up(self) -> int | None:
        """Read what was sent while disconnected; None if it failed (retried)."""
        bot_id = self.events.bot_id if self.events is not None else None
        try:
            with self._lock:
                rewind = dict(self.rewind)
            if rewind:
                with self.engine.begin() as connection:
                    for place, position in rewind.items():
                        Q.cursor_back(connection, SOURCE, place, str(position), self.clock())
                with self._lock:
                    for place, position in rewind.items():
                        if self.rewind.get(place) == position:
                            del self.rewind[place]
            if self.gateway is not None and self.gateway.client.is_ready():  # READY or RESUMED: up
                with self.engine.begin() as connection:
                    for place in ("discord", "discord/refused"):
                        Q.cursor_back(connection, GATEWAYS, place, "0", self.clock())
                self.down_since = None
            new = catch_up(self.engine, self.settings, self.rest, self.table, self.clock(), bot_id)
        except Exception:
            log.exception("Discord catch-up failed; it is tried again")
            if self.gateway is not None:
                self._fall_behind()
            return None
        with self._lock:
            self.behind = bool(self.rewind)  # a store failed meanwhile: its catch-up is to come
        self.catch_ups += 1
        if new:
            self.wake.set()
        return new

    def start(self) -> "DiscordLink":
        """Connect the gateway in a thread of its own."""
        from dealer.inbox.discord import GatewayEvents, GatewayThread, make_client
        from dealer.shell.interactions import Interactions

        self.events = GatewayEvents(self.table, self.sink, self.catch_up, self.clock)
        # Each connection's first events may come before its catch-up: no cursor moves till then.
        self.events.connecting = lambda: setattr(self, "behind", True)
        self.events.interactions = Interactions(self)
        make = functools.partial(make_client, self.events, api_url=self.settings.discord_api_url,
                                 gateway_url=self.settings.discord_gateway_url,
                                 guild_ready_timeout=self.guild_ready_timeout)  # a client per (re)start
        self.gateway = GatewayThread(make, self.settings.discord_token, (self.retry_first, 300.0),
                                     self.gateway_down).start()
        return self

    def gateway_down(self, exc: BaseException, refused: bool) -> None:
        """Mark the gateway down since its first stop, for ``dealer health`` (refused: for good)."""
        self.down_since = since = self.down_since or self.clock()
        try:
            with self.engine.begin() as connection:
                Q.move_cursor(connection, GATEWAYS, "discord/refused" if refused else "discord",
                              str(int(since.timestamp() * 1000)), self.clock())
        except Exception:
            log.exception("the Discord gateway's stop could not be marked for `dealer health`")

    def stop(self) -> None:
        """Disconnect the gateway."""
        with self._lock:
            if self._retry is not None:
                self._retry.cancel()
                self._retry = None
        if self.gateway is not None:
            self.gateway.stop()
        self.rest.close()


def discord_link(settings: Settings, engine: Engine, wake: threading.Event | None = None,
                 clock: Callable[[], datetime] = utcnow) -> DiscordLink | None:
    """The Discord link a daemon needs (None when no route listens on Discord)."""
    if not settings.routes.strip() or not hears_discord(route_table(settings)):
        return None
    import discord  # noqa: F401  (dealer-moderator[discord]: refused here, before the daemon starts)

    return DiscordLink(settings, engine, wake, clock)


MESSAGE_CONTENT_FLAGS = (1 << 18) | (1 << 19)
"""The application flags saying the message content intent is on (verified, or limited)."""


def check_discord(settings: Settings, rest: Any = None) -> tuple[list[str], bool]:
    """``dealer discord check``: each step of the setup, ``ok`` or what is missing, and whether all is well."""
    lines: list[str] = []
    ok = True

    def say(good: bool, text: str) -> None:
        nonlocal ok
        ok = ok and good
        lines.append(("ok       " if good else "MISSING  ") + text)

    def say_note(good: bool, text: str) -> None:  # slash commands: text commands work without
        lines.append(("ok       " if good else "NOTE     ") + text)

    try:
        import discord  # noqa: F401
        import httpx  # noqa: F401
    except ImportError:
        say(False, str(missing("discord", "Discord")))
        return lines, False
    say(True, "dealer-moderator[discord] is installed")
    table = route_table(settings)
    discord_routes = {c: d for c, d in table.routes.items() if d.kind == "discord"}
    if not discord_routes:
        say(False, "no route leads to Discord: set DEALER_ROUTES, e.g. "
                   "'#the-raceway=discord:channel/ID;pm=discord:dm'")
    for problem in table.problems(discord_token=bool(settings.discord_token),
                                  webhook_url=bool(settings.discord_webhook_url)):
        say(False, f"route {problem}")
    if discord_routes and not table.problems(discord_token=bool(settings.discord_token),
                                             webhook_url=bool(settings.discord_webhook_url)):
        say(True, "routes: " + ", ".join(f"{c} -> {d.spec}" for c, d in sorted(discord_routes.items())))
    from dealer.publish.base import DeliveryFailed

    rest = rest or discord_rest(settings, max_wait=30.0)
    if settings.discord_token:
        try:
            me = rest.me()
            say(True, f"the token is the bot {me.get('username')} (id {me.get('id')})")
            app = rest.request("GET", "/oauth2/applications/@me", "applications/@me")
            flags = int(app.get("flags") or 0)
            say(bool(flags & MESSAGE_CONTENT_FLAGS),
                "the Message Content intent is on" if flags & MESSAGE_CONTENT_FLAGS else
                "the Message Content intent is off: Developer Portal > Bot > Privileged Gateway "
                "Intents > Message Content Intent (without it dealer reads no command)")
            for channel, dest in sorted(discord_routes.items()):
                if dest.discord_channel is None:
                    continue
                try:
                    found = rest.request("GET", f"/channels/{dest.discord_channel}", f"channel/{dest.discord_channel}")
                    say(True, f"{channel}: the bot sees channel {found.get('name')} ({dest.discord_channel})")
                except DeliveryFailed as exc:
                    say(False, f"{channel}: {exc}")
            from dealer.shell.interactions import installed

            try:
                for good, line in installed(rest, settings):
                    say_note(good, line)
            except DeliveryFailed as exc:
                say_note(False, f"the slash commands could not be read: {exc}")
        except DeliveryFailed as exc:
            say(False, f"the token: {exc}")
    elif any(d.arg != "webhook" for d in discord_routes.values()):
        say(False, "DEALER_DISCORD_TOKEN is not set (Developer Portal > Bot > Reset Token)")
    if settings.discord_webhook_url:
        try:
            hook = rest.request("GET", settings.discord_webhook_url, "webhook")
            say(True, f"the webhook posts in channel {hook.get('channel_id')}")
        except DeliveryFailed as exc:
            say(False, f"the webhook: {exc}")
    rest.close()
    return lines, ok


__all__ = ["Destination", "DiscordLink", "build_publisher", "catch_up", "discord_link", "store_heard"]
