"""Discord's slash commands in and their answers out (docs/DISCORD.md).

A command is deferred at once and only then stored as its text line, the way every message
is: Discord drops an interaction not answered within 3 seconds, and the store write may
wait behind a pass. The reply goes as the interaction's ephemeral follow-up while its
token lives (kept in the stored raw JSON, so a restart still answers), else by DM.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import datetime, timedelta
from typing import Any, Callable

from sqlalchemy.engine import Engine

from dealer.games.slash import Invoked, invoked, payload
from dealer.inbox.base import InboxMessage
from dealer.inbox.discord import snowflake_time
from dealer.publish.base import DeliveryFailed, OutgoingPost, Publisher
from dealer.routes import RouteTable, parse_routes
from dealer.settings import Settings
from dealer.store import queries as Q
from dealer.store.db import session_factory
from dealer.views.slash import choices, game_for, player_of

log = logging.getLogger(__name__)

FOLLOW_UP_WINDOW = timedelta(minutes=14)
"""How long after an interaction its reply goes as the follow-up (the token lives 15 minutes)."""

SOURCE = "discord"
_REPLY_KEY = re.compile(r"^in:(\d+):reply:")


def _user(data: dict[str, Any]) -> dict[str, Any]:
    return (data.get("member") or {}).get("user") or data.get("user") or {}


def _channel(data: dict[str, Any], table: RouteTable) -> str | None:
    """The routed channel an interaction was used in, ``pm`` in a DM, None elsewhere."""
    if not data.get("guild_id"):
        return "pm"
    return table.discord_channels().get(int(data.get("channel_id") or 0))


class Interactions:
    """What the gateway hands over of ``INTERACTION_CREATE``, for a :class:`DiscordLink`."""

    def __init__(self, link: Any) -> None:
        self.link = link

    def refusal(self, data: dict[str, Any]) -> str | None:
        """Why a command is answered at once and not stored (no store read): None to take it."""
        if invoked(data.get("data") or {}) is None:
            return "dealer has no such command (any more): the host updates them with `dealer discord sync`."
        if _channel(data, self.link.table) is None:
            return "No game is played in this channel: use a game's channel, or a DM to dealer."
        return None

    def message(self, data: dict[str, Any]) -> tuple[InboxMessage, str]:
        """The message a command stands for, and its raw JSON (with the interaction's token)."""
        asked = invoked(data["data"])
        assert asked is not None
        user, channel = _user(data), _channel(data, self.link.table)
        game = asked.game
        if game is None:  # the channel's game of that kind, else the player's one
            with session_factory(self.link.engine)() as session:
                found = game_for(session, asked.kind, None if channel == "pm" else channel,
                                 player_of(session, f"discord:{user['id']}"))
                game = found.id if found is not None else None
        message = InboxMessage(
            id=str(data["id"]), sender=f"discord:{user['id']}", channel="pm", game=game,
            sender_name=user.get("global_name") or user.get("username"), body=asked.line(),
            sent_at=snowflake_time(data["id"]),
        )
        raw = {**json.loads(message.model_dump_json()), "interaction": {
            "application_id": str(data["application_id"]), "token": data["token"], "channel": channel}}
        return message, json.dumps(raw)

    def store(self, data: dict[str, Any]) -> None:
        """Store a deferred command (a replay is a duplicate) and wake the daemon; say at once if it cannot be taken."""
        link = self.link
        try:
            message, raw = self.message(data)
            stored = link.store([message], {}, {message.id: raw})
        except Exception:
            log.exception("Discord interaction %s not stored", data.get("id"))
            self.tell(data, "dealer could not take your command just now; send it again.")
            return
        if not (stored.new or stored.duplicates or stored.conflicts):
            self.tell(data, "dealer did not take your command (too many messages); wait a "
                            "few minutes and send it again.")
            return
        link.heard += len(stored.new)
        link.wake.set()

    def tell(self, data: dict[str, Any], text: str) -> None:
        """An ephemeral follow-up to a deferred command, at once."""
        try:
            self.link.rest.request("POST", f"/webhooks/{data['application_id']}/{data['token']}",
                                   "interaction", json={"content": text, "flags": 64})
        except DeliveryFailed as exc:
            log.warning("Discord interaction %s: the follow-up failed: %s", data.get("id"), exc)

    def complete(self, data: dict[str, Any]) -> list[dict[str, str]]:
        """The choices of an autocomplete, read from the game's state (none on any failure)."""
        asked = invoked(data.get("data") or {})
        channel = _channel(data, self.link.table)
        if asked is None or channel is None:
            return []
        typed = str(asked.values.get(asked.focused or "", "") or "")
        try:
            with session_factory(self.link.engine)() as session:
                return choices(session, f"discord:{_user(data).get('id')}",
                               None if channel == "pm" else channel, asked, typed)
        except Exception:
            log.exception("Discord autocomplete %s failed", data.get("id"))
            return []


def follow_up_of(engine: Engine, clock: Callable[[], datetime]) -> Callable[[OutgoingPost], tuple[str, str] | None]:
    """The interaction a reply answers by follow-up (application id, token); None when none, or too late."""

    def find(post: OutgoingPost) -> tuple[str, str] | None:
        reply = _REPLY_KEY.match(post.key)
        if not reply or post.recipient is None:
            return None
        with engine.connect() as connection:
            row = connection.execute(Q.MAIL_OF_MESSAGE, {"id": int(reply.group(1))}).first()
        if row is None or row.source != SOURCE:
            return None
        raw = json.loads(row.raw)
        found = raw.get("interaction")
        if not found or clock() - snowflake_time(raw["id"]) > FOLLOW_UP_WINDOW:
            return None
        return found["application_id"], found["token"]

    return find


def attach(publisher: Publisher, engine: Engine, clock: Callable[[], datetime]) -> None:
    """Give a Discord publisher the follow-ups of the store."""
    if getattr(publisher, "format", "") == "discord" and getattr(publisher, "follow_up", 0) is None:
        publisher.follow_up = follow_up_of(engine, clock)  # type: ignore[attr-defined]


# -- installing the commands (`dealer discord sync`, `check`) ----------------------------------


def _essence(item: Any) -> Any:
    """What of a command Discord keeps that dealer sets (defaults filled in)."""
    if isinstance(item, list):
        return [_essence(i) for i in item]
    keys = ("type", "name", "description", "required", "choices", "min_value", "max_value",
            "autocomplete", "options", "value")
    kept = {k: _essence(item[k]) if k in ("options", "choices") else item[k]
            for k in keys if item.get(k) not in (None, False, [])}
    return kept


def scopes(settings: Settings, rest: Any, global_: bool) -> tuple[str, list[str | None]]:
    """The application id and where its commands live: each routed channel's guild, or everywhere (None)."""
    app = str(rest.request("GET", "/oauth2/applications/@me", "applications/@me")["id"])
    if global_:
        return app, [None]
    guilds: list[str | None] = []
    for channel in sorted(parse_routes(settings.routes, settings.publish).discord_channels()):
        try:
            found = rest.request("GET", f"/channels/{channel}", f"channel/{channel}")
        except DeliveryFailed as exc:  # `dealer discord check` says why
            log.warning("channel %s skipped: %s", channel, exc)
            continue
        if found.get("guild_id") and str(found["guild_id"]) not in guilds:
            guilds.append(str(found["guild_id"]))
    return app, guilds


def _path(app: str, guild: str | None) -> str:
    return f"/applications/{app}/guilds/{guild}/commands" if guild else f"/applications/{app}/commands"


def compare(installed: list[dict[str, Any]], wanted: list[dict[str, Any]]) -> list[str]:
    """What installing ``wanted`` over ``installed`` changes, one line a command."""
    have = {c["name"]: _essence(c) for c in installed}
    want = {c["name"]: _essence(c) for c in wanted}
    return ([f"added /{n}" for n in want if n not in have]
            + [f"changed /{n}" for n in want if n in have and have[n] != want[n]]
            + [f"removed /{n}" for n in have if n not in want])


def sync(settings: Settings, rest: Any, global_: bool = False, clear: bool = False) -> list[str]:
    """Install the commands wherever they differ (a bulk overwrite) through ``rest``, which it
    closes; one line per scope."""
    wanted = [] if clear else payload()
    lines = []
    try:
        app, where = scopes(settings, rest, global_)
        if not where:
            return ["no routed channel is in a server: nothing to install (or use --global)"]
        for guild in where:
            scope = f"server {guild}" if guild else "everywhere"
            path = _path(app, guild)
            changes = compare(rest.request("GET", path, "commands") or [], wanted)
            if changes:
                rest.request("PUT", path, "commands", json=wanted)
            lines.append(f"{scope}: " + (", ".join(changes) if changes else "unchanged"))
    finally:
        rest.close()
    return lines


def installed(rest: Any, settings: Settings) -> list[tuple[bool, str]]:
    """``dealer discord check``'s lines: whether each scope's commands are installed and current."""
    wanted = payload()
    app, where = scopes(settings, rest, False)
    found = {guild: rest.request("GET", _path(app, guild), "commands") or [] for guild in where}
    everywhere = rest.request("GET", _path(app, None), "commands") or []
    lines = []
    for guild in where or [None]:
        current = everywhere if not found.get(guild) else found[guild]
        scope = f"server {guild}" if guild else "everywhere"
        changes = compare(current, wanted)
        lines.append((not changes, f"the slash commands in {scope} are current" if not changes else
                      f"the slash commands in {scope} are not current ({', '.join(changes)}): "
                      "`dealer discord sync`"))
    return lines


__all__ = ["FOLLOW_UP_WINDOW", "Interactions", "Invoked", "attach", "installed", "sync"]
