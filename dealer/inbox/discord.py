"""Discord in: a gateway connection (discord.py, dealer-moderator[discord]) turned into
inbox messages; posts go out through :mod:`dealer.publish.discord`.

discord.py keeps the gateway (heartbeats, resume, reconnect) and can be pointed at the
local fake. Each event is stored by the idempotent path with an id made from Discord's
(docs/DISCORD.md), so a replay after a resume is a duplicate; the sender is
``discord:USER_ID``. Bots', webhooks' and unrouted channels' messages are ignored.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
import logging
import threading
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, TypeVar

from dealer.inbox.base import InboxMessage, Unreadable
from dealer.routes import PM, RouteTable

log = logging.getLogger(__name__)

DISCORD_EPOCH_MS = 1420070400000
SOURCE = "discord"


def snowflake_time(snowflake: int | str) -> datetime:
    """The time a Discord id was made (its top 42 bits: ms since 2015-01-01 UTC)."""
    ms = (int(snowflake) >> 22) + DISCORD_EPOCH_MS
    return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms)


def time_snowflake(when: datetime) -> int:
    """The smallest Discord id of ``when`` (for "history after this time")."""
    ms = int((when - datetime(1970, 1, 1, tzinfo=timezone.utc)).total_seconds() * 1000)
    return max(0, ms - DISCORD_EPOCH_MS) << 22


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)
    except ValueError:
        return None
    except OverflowError:  # the very edge of the calendar: no time dealer can keep
        raise Unreadable(f"its time {text[:60]!r} is outside the times dealer can keep") from None


_Read = TypeVar("_Read")


def set_aside(what: str, empty: _Read) -> Callable[[Callable[..., _Read]], Callable[..., _Read]]:
    """Read one event; one that cannot be read is set aside with why, logged, giving ``empty``:
    nothing one sender sends stops the gateway or a pass."""
    def decorate(read: Callable[..., _Read]) -> Callable[..., _Read]:
        @functools.wraps(read)
        def guarded(*args: Any, **kwargs: Any) -> _Read:
            try:
                return read(*args, **kwargs)
            except Exception as exc:
                log.warning("Discord %s set aside: %s", what, _why(exc))
                return empty
        return guarded
    return decorate


def _why(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, Unreadable) else f"{type(exc).__name__}: {exc}"


def read_history(
    history: list[Any], routes: RouteTable, bot_id: int | None, *, is_dm: bool,
) -> tuple[list[InboxMessage], str | None]:
    """A channel's history messages, oldest first (unreadable ones set aside), and the last id read."""
    found: list[InboxMessage] = []
    last: str | None = None
    for data in history:
        try:
            message = message_from_payload(data, routes, bot_id, is_dm=is_dm)
            last = str(int(data["id"]))
        except Exception as exc:
            ident = data.get("id") if isinstance(data, dict) else None
            log.warning("Discord message %.60r set aside: %s", ident, _why(exc))
            continue
        if message is not None:
            found.append(message)
    return found, last


def place_of(channel_id: int | str, is_dm: bool, author_id: int | str | None = None) -> str:
    """The cursor place of a channel: ``channel/ID``, or ``dm/USER`` for a DM."""
    return f"dm/{author_id}" if is_dm else f"channel/{channel_id}"


def message_from_payload(
    data: dict[str, Any], routes: RouteTable, bot_id: int | None, *, is_dm: bool | None = None,
) -> InboxMessage | None:
    """The inbox message of a Discord message object, or None when it is not for dealer."""
    author = data.get("author") or {}
    if author.get("bot") or data.get("webhook_id") or (bot_id is not None and str(author.get("id")) == str(bot_id)):
        return None
    if data.get("type", 0) not in (0, 19):  # a default message or a reply
        return None
    dm = (is_dm if is_dm is not None else "guild_id" not in data)
    channel = PM if dm else routes.discord_channels().get(int(data["channel_id"]))
    if channel is None:
        return None
    return InboxMessage(
        id=str(data["id"]), sender=f"discord:{author['id']}",
        sender_name=author.get("global_name") or author.get("username"),
        channel=channel, body=data.get("content") or "", sent_at=snowflake_time(data["id"]),
    )


class GatewayEvents:
    """Turns discord.py's events into inbox messages for ``sink(messages, places)`` (each place
    to its highest id heard); ``caught_up()`` on every READY and RESUMED, ``connecting()`` on
    every connection before them."""

    def __init__(self, routes: RouteTable, sink: Callable[[list[InboxMessage], dict[str, str]], None],
                 caught_up: Callable[[], None], clock: Callable[[], datetime]) -> None:
        self.routes = routes
        self.sink = sink
        self.caught_up = caught_up
        self.clock = clock
        self.connecting: Callable[[], None] = lambda: None
        self.bot_id: int | None = None
        self.interactions: Any = None
        """A :class:`dealer.shell.interactions.Interactions`, or None: slash commands ignored."""

    def _channel(self, channel_id: int, guild_id: int | None) -> str | None:
        return PM if guild_id is None else self.routes.discord_channels().get(channel_id)

    @set_aside("message", ([], {}))
    def on_message(self, message: Any) -> tuple[list[InboxMessage], dict[str, str]]:
        """A discord.py ``Message``."""
        author = message.author
        if author.bot or message.webhook_id or author.id == self.bot_id:
            return [], {}
        # Without the guilds intent no guild is cached: a guild channel's message carries
        # its guild id on its (partial) channel; a DM has none.
        guild_id = getattr(message.guild, "id", None) or getattr(message.channel, "guild_id", None)
        is_dm = guild_id is None
        channel = self._channel(message.channel.id, guild_id)
        if channel is None:
            return [], {}
        heard = InboxMessage(
            id=str(message.id), sender=f"discord:{author.id}",
            sender_name=getattr(author, "global_name", None) or author.name,
            channel=channel, body=message.content or "", sent_at=snowflake_time(message.id),
        )
        return [heard], {place_of(message.channel.id, is_dm, author.id): str(message.id)}

    @set_aside("edit", [])
    def on_edit(self, payload: Any) -> list[InboxMessage]:
        """A ``RawMessageUpdateEvent``."""
        data = payload.data
        author = data.get("author") or {}
        if author.get("bot") or data.get("webhook_id") or str(author.get("id")) == str(self.bot_id):
            return []
        guild_id = data.get("guild_id") or payload.guild_id
        channel = self._channel(payload.channel_id, int(guild_id) if guild_id else None)
        if channel is None or "content" not in data or not author:
            return []
        edited = data.get("edited_timestamp") or ""
        return [InboxMessage(
            id=f"{payload.message_id}:edit:{edited}", sender=f"discord:{author['id']}",
            sender_name=author.get("global_name") or author.get("username"), channel=channel,
            kind="edit", target=str(payload.message_id), body=data.get("content") or "",
            sent_at=_parse_time(edited) or self.clock(),
        )]

    @set_aside("deletion", [])
    def on_delete(self, payload: Any) -> list[InboxMessage]:
        """A deletion: its sender is filled in from the stored message (Discord does not say it)."""
        channel = self._channel(payload.channel_id, payload.guild_id)
        if channel is None:
            return []
        return [InboxMessage(
            id=f"{payload.message_id}:delete", sender="discord:0", channel=channel, kind="delete",
            target=str(payload.message_id), sent_at=self.clock(),
        )]

    @set_aside("reaction", [])
    def on_reaction(self, payload: Any, removed: bool) -> list[InboxMessage]:
        """A ``RawReactionActionEvent`` (added or removed)."""
        if payload.user_id == self.bot_id:
            return []
        member = getattr(payload, "member", None)
        if member is not None and getattr(member, "bot", False):
            return []
        channel = self._channel(payload.channel_id, payload.guild_id)
        if channel is None:
            return []
        now = self.clock()
        emoji = str(payload.emoji)
        ms = int(now.timestamp() * 1000)
        return [InboxMessage(
            id=f"{payload.message_id}:react:{payload.user_id}:{emoji}:{'-' if removed else '+'}:{ms}",
            sender=f"discord:{payload.user_id}", channel=channel, kind="reaction",
            target=str(payload.message_id), emoji=emoji, removed=removed, sent_at=now,
        )]


def make_client(events: GatewayEvents, *, api_url: str = "", gateway_url: str = "",
                guild_ready_timeout: float = 2.0) -> Any:
    """A discord.py client handing every event to ``events``, whose sink runs in one worker thread
    (the events in the order heard) so the store never blocks the heartbeats."""
    import discord
    import yarl
    from discord.gateway import DiscordWebSocket
    from discord.http import Route

    if api_url:
        Route.BASE = api_url.rstrip("/")
    if gateway_url:
        # discord.py connects to this class attribute (and falls back to it after an
        # invalidated session); one process talks to one Discord.
        DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)

    intents = discord.Intents.none()
    intents.guild_messages = True
    intents.dm_messages = True
    intents.message_content = True
    intents.guild_reactions = True
    intents.dm_reactions = True

    # The debug events give the raw INTERACTION_CREATE (discord.py's own parsing of it
    # wants a command tree dealer does not use).
    client = discord.Client(intents=intents, guild_ready_timeout=guild_ready_timeout,
                            max_messages=None, chunk_guilds_at_startup=False, enable_debug_events=True)

    # One worker stores what the gateway hears, in the order it was heard: discord.py runs each
    # event's handler as a task of its own, and a later message stored first moved the cursor
    # past an earlier one that a kill then left unstored, where no catch-up looks again.
    storer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="discord-store")

    async def hand(found: tuple[list[InboxMessage], dict[str, str]] | list[InboxMessage]) -> None:
        messages, places = found if isinstance(found, tuple) else (found, {})
        if messages:
            await asyncio.get_running_loop().run_in_executor(storer, events.sink, messages, places)

    @client.event
    async def on_connect() -> None:
        events.connecting()

    @client.event
    async def on_ready() -> None:
        events.bot_id = client.user.id if client.user else None
        log.info("Discord gateway ready as %s", client.user)
        await asyncio.to_thread(events.caught_up)

    @client.event
    async def on_resumed() -> None:
        log.info("Discord gateway resumed")
        await asyncio.to_thread(events.caught_up)

    @client.event
    async def on_message(message: Any) -> None:
        await hand(events.on_message(message))

    @client.event
    async def on_socket_raw_receive(raw: str) -> None:
        if events.interactions is None or '"INTERACTION_CREATE"' not in raw:
            return
        event = json.loads(raw)
        if event.get("t") == "INTERACTION_CREATE":
            await answer_interaction(client, events.interactions, event["d"])

    @client.event
    async def on_raw_message_edit(payload: Any) -> None:
        await hand(events.on_edit(payload))

    @client.event
    async def on_raw_message_delete(payload: Any) -> None:
        await hand(events.on_delete(payload))

    @client.event
    async def on_raw_reaction_add(payload: Any) -> None:
        await hand(events.on_reaction(payload, removed=False))

    @client.event
    async def on_raw_reaction_remove(payload: Any) -> None:
        await hand(events.on_reaction(payload, removed=True))

    return client


async def answer_interaction(client: Any, handler: Any, data: dict[str, Any]) -> None:
    """Answer an interaction within Discord's 3 seconds: an autocomplete's choices, or a command
    refused, or deferred and only then stored."""
    from discord.http import Route

    async def respond(body: dict[str, Any]) -> bool:
        route = Route("POST", "/interactions/{interaction_id}/{interaction_token}/callback",
                      interaction_id=data["id"], interaction_token=data["token"])
        try:
            await client.http.request(route, json=body)
            return True
        except Exception as exc:  # acknowledged already (a replay), or too late
            log.warning("Discord interaction %s not answered: %s", data.get("id"), exc)
            return False

    try:
        if data.get("type") == 4:
            choices = await asyncio.to_thread(handler.complete, data)
            await respond({"type": 8, "data": {"choices": choices}})
        elif data.get("type") == 2:
            refusal = handler.refusal(data)
            if refusal:
                await respond({"type": 4, "data": {"content": refusal, "flags": 64}})
                return
            await respond({"type": 5, "data": {"flags": 64}})
            await asyncio.to_thread(handler.store, data)
    except Exception as exc:
        log.warning("Discord interaction %.60r set aside: %s", data.get("id"), _why(exc))


class GatewayThread:
    """The gateway client in its own thread and event loop, for ``dealer run``. One that stops with
    an error is started again, a fresh client after a backoff (issue 36), unless Discord refused
    its login (a bad token, an intent not enabled): retrying cannot fix that."""

    def __init__(self, make: Callable[[], Any], token: str, backoff: tuple[float, float] = (1.0, 300.0),
                 down: Callable[[BaseException, bool], None] = lambda exc, refused: None) -> None:
        self.make = make
        self.client: Any = None
        self.token = token
        self.backoff = backoff
        self.down = down  # told of each stop by an error, and whether Discord refused the login
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="discord-gateway", daemon=True)
        self.error: BaseException | None = None
        self._stopping = threading.Event()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported by the daemon's log
            self.error = exc
            log.exception("the Discord gateway stopped: %s", exc)
        finally:
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    async def _serve(self) -> None:
        from discord import LoginFailure, PrivilegedIntentsRequired

        first, most, wait = *self.backoff, 0.0
        while True:
            self.client, began = self.make(), self.loop.time()  # a closed client cannot start again
            if self._stopping.is_set():  # (after the client is set: ``stop`` closes the one it sees)
                return
            try:
                return await self.client.start(self.token)  # returns once ``stop`` closes it
            except Exception as exc:
                if self._stopping.is_set():
                    return
                self.error, refused = exc, isinstance(exc, (LoginFailure, PrivilegedIntentsRequired))
                # Short again after a connection that lasted (Discord limits the identifies).
                wait = first if not wait or self.loop.time() - began > most else min(most, wait * 2)
                log.error("Discord refused the gateway (%s): not retried; fix DEALER_DISCORD_TOKEN or the "
                          "intents (`dealer discord check`), then restart" if refused else
                          f"the Discord gateway stopped (%s); started again in {wait:g} s", _why(exc),
                          exc_info=not refused)
                self.down(exc, refused)
                if refused:
                    return
            finally:
                await self.client.close()
            await asyncio.to_thread(self._stopping.wait, wait)

    def start(self) -> "GatewayThread":
        self.thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        if self.client is not None and self.thread.is_alive() and not self.loop.is_closed():
            # Closing makes ``start`` return, which ends the thread (the close's own
            # future may never resolve once its loop stops: wait for the thread instead).
            try:
                asyncio.run_coroutine_threadsafe(self.client.close(), self.loop)
            except RuntimeError:  # the loop closed meanwhile
                pass
        self.thread.join(timeout)
