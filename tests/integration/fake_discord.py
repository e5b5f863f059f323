"""A local fake of the parts of Discord dealer uses (REST API v10 with its rate limits and
``429``, the gateway with resumes, interactions and commands), on 127.0.0.1 in a thread,
for the tests and ``bench/discord_publish.py``: no test reaches the internet. Needs
dealer-moderator[discord].

``clock`` (seconds) drives the rate-limit windows and ``now`` the new ids: both can be the
test's controlled clock. :meth:`user_says` and friends act as a Discord user.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

from aiohttp import WSMsgType, web

DISCORD_EPOCH_MS = 1420070400000
BOT_ID = 900000000000000001
APP_ID = 900000000000000002
GUILD_ID = 900000000000000003


@dataclass
class Request:
    """One REST request the fake answered."""

    at: float
    method: str
    path: str
    status: int
    route: str
    body: Any = None


@dataclass
class _Window:
    start: float = 0.0
    count: int = 0


@dataclass
class _Session:
    id: str
    events: list[dict[str, Any]] = field(default_factory=list)
    seq: int = 0


class FakeDiscord:
    """See the module's doc."""

    def __init__(self, *, limit: int = 5, window: float = 5.0,
                 clock: Callable[[], float] = time.monotonic,
                 now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
                 token: str = "fake-token", message_content_intent: bool = True) -> None:
        self.limit = limit
        self.window = window
        self.clock = clock
        self.now = now
        self.token = token
        self.message_content_intent = message_content_intent
        self.channels: dict[int, list[dict[str, Any]]] = {}
        self.guild_channels: set[int] = set()
        self.dm_channels: dict[int, int] = {}  # user id -> DM channel id
        self.users: dict[int, dict[str, Any]] = {}
        self.requests: list[Request] = []
        self.windows: dict[str, _Window] = {}
        self.nonces: dict[tuple[int, str], dict[str, Any]] = {}
        self.sessions: dict[str, _Session] = {}
        self.session: _Session | None = None
        self.ws: web.WebSocketResponse | None = None
        self.others: dict[str, web.WebSocketResponse] = {}
        """The connections of the earlier sessions still open (several daemons on one bot, as
        Discord allows unsharded): each hears every event too, but only :attr:`session`, the
        latest, keeps its events for a resume."""
        self.connections = 0
        self.identifies = 0
        self.resumes = 0
        self._invalidate = False
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="fake-discord", daemon=True)
        self.port = 0
        self.connected = threading.Event()
        self.gate = threading.Event()
        self.gate.set()
        self.interactions: dict[str, dict[str, Any]] = {}
        """By interaction id: its payload, ``at`` (monotonic), ``answers`` and ``follow_ups``."""
        self.commands: dict[str | None, list[dict[str, Any]]] = {}
        """The installed application commands, by guild id (None: global)."""
        self.new_post = threading.Event()
        """Set whenever the bot or the webhook posts (a test waits on it)."""

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> "FakeDiscord":
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(), self.loop).result(10)
        return self

    async def _serve(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/gateway/ws", self._gateway)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._rest)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def stop(self) -> None:
        async def shutdown() -> None:
            if self.ws is not None:
                await self.ws.close()
            await self.runner.cleanup()

        asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway/ws"

    def webhook_url(self, channel_id: int) -> str:
        self.add_channel(channel_id)
        return f"{self.api_url}/webhooks/{channel_id}/hook-token"

    # -- state -----------------------------------------------------------------------------

    def add_channel(self, channel_id: int) -> None:
        self.guild_channels.add(channel_id)
        self.channels.setdefault(channel_id, [])

    def add_user(self, user_id: int, username: str, global_name: str | None = None) -> dict[str, Any]:
        user = {"id": str(user_id), "username": username, "global_name": global_name,
                "discriminator": "0", "avatar": None}
        self.users[user_id] = user
        return user

    def rename(self, user_id: int, global_name: str) -> None:
        """The user changes their display name."""
        self.users[user_id]["global_name"] = global_name

    def snowflake(self) -> int:
        ms = int(self.now().timestamp() * 1000) - DISCORD_EPOCH_MS
        return (ms << 22) | (next(self._ids) & 0x3FFFFF)

    def _message(self, channel_id: int, author: dict[str, Any], content: str, **extra: Any) -> dict[str, Any]:
        message = {
            "id": str(self.snowflake()), "channel_id": str(channel_id), "author": dict(author),
            "content": content, "timestamp": self.now().isoformat(), "edited_timestamp": None,
            "tts": False, "mention_everyone": False, "mentions": [], "mention_roles": [],
            "attachments": [], "embeds": [], "pinned": False, "type": 0, **extra,
        }
        if channel_id in self.guild_channels:
            message["guild_id"] = str(GUILD_ID)
        self.channels.setdefault(channel_id, []).append(message)
        return message

    def wait_for(self, condition: Callable[[], bool], timeout: float = 30.0) -> bool:
        """Wait (on :attr:`new_post`) until ``condition()``; False on timeout."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                return False
            self.new_post.wait(0.1)
            self.new_post.clear()
        return True

    def posts(self, channel_id: int) -> list[dict[str, Any]]:
        """The messages the bot (or the webhook) posted in a channel, in order."""
        return [m for m in self.channels.get(channel_id, [])
                if m["author"]["id"] == str(BOT_ID) or m.get("webhook_id")]

    def dm_posts(self, user_id: int) -> list[dict[str, Any]]:
        channel = self.dm_channels.get(user_id)
        return self.posts(channel) if channel else []

    # -- acting as users ---------------------------------------------------------------------

    def user_says(self, channel_id: int | None, user_id: int, content: str, *, dm: bool = False) -> dict[str, Any]:
        """A user posts in a channel (or DMs the bot: ``dm=True``)."""
        if dm:
            channel_id = self._dm_channel(user_id)
        assert channel_id is not None
        message = self._message(channel_id, self.users[user_id], content)
        self.dispatch("MESSAGE_CREATE", message)
        return message

    def user_edits(self, message: dict[str, Any], content: str) -> dict[str, Any]:
        message.update(content=content, edited_timestamp=self.now().isoformat(),
                       author=dict(self.users[int(message["author"]["id"])]))
        self.dispatch("MESSAGE_UPDATE", dict(message))
        return message

    def user_deletes(self, message: dict[str, Any]) -> None:
        channel = int(message["channel_id"])
        self.channels[channel] = [m for m in self.channels[channel] if m["id"] != message["id"]]
        data = {"id": message["id"], "channel_id": message["channel_id"]}
        if "guild_id" in message:
            data["guild_id"] = message["guild_id"]
        self.dispatch("MESSAGE_DELETE", data)

    def user_reacts(self, message: dict[str, Any], user_id: int, emoji: str, *, removed: bool = False) -> None:
        data: dict[str, Any] = {"user_id": str(user_id), "channel_id": message["channel_id"],
                                "message_id": message["id"], "emoji": {"id": None, "name": emoji},
                                "burst": False, "type": 0}
        if "guild_id" in message:
            data["guild_id"] = message["guild_id"]
            if not removed:
                data["member"] = {"user": self.users[user_id], "roles": [], "joined_at": self.now().isoformat(),
                                  "deaf": False, "mute": False, "flags": 0}
        self.dispatch("MESSAGE_REACTION_REMOVE" if removed else "MESSAGE_REACTION_ADD", data)

    def user_invokes(self, channel_id: int | None, user_id: int, command: str, sub: str,
                     options: dict[str, Any] | None = None, *, focused: str | None = None,
                     dm: bool = False) -> dict[str, Any]:
        """A user runs ``/command sub`` with ``options`` (an autocomplete when ``focused``) in a channel or DM."""
        if dm:
            channel_id = self._dm_channel(user_id)
        assert channel_id is not None
        typed = {**({focused: ""} if focused else {}), **(options or {})}  # the focused one is always sent
        given = [{"name": k, "type": 4 if isinstance(v, int) else 3, "value": v,
                  **({"focused": True} if k == focused else {})} for k, v in typed.items()]
        ident = str(self.snowflake())
        data: dict[str, Any] = {
            "id": ident, "application_id": str(APP_ID), "type": 4 if focused else 2,
            "token": f"interaction-token-{ident}", "version": 1, "locale": "en-US",
            "channel_id": str(channel_id), "app_permissions": "0", "entitlements": [],
            "attachment_size_limit": 8388608, "authorizing_integration_owners": {"0": str(GUILD_ID)},
            "channel": self._interaction_channel(channel_id, user_id),
            "data": {"id": "900000000000000010", "name": command, "type": 1,
                     "options": [{"type": 1, "name": sub, "options": given}]},
        }
        if channel_id in self.guild_channels:
            data.update(guild_id=str(GUILD_ID), context=0, member={
                "user": self.users[user_id], "roles": [], "joined_at": self.now().isoformat(),
                "deaf": False, "mute": False, "flags": 0, "permissions": "0"})
        else:
            data.update(user=self.users[user_id], context=1)
        self.interactions[ident] = {"payload": data, "at": time.monotonic(), "created": self.now(),
                                    "answers": [], "follow_ups": []}
        self.dispatch("INTERACTION_CREATE", data)
        return data

    def _interaction_channel(self, channel_id: int, user_id: int) -> dict[str, Any]:
        """The channel an interaction carries (as Discord sends it: whole enough to read)."""
        if channel_id not in self.guild_channels:
            return {"id": str(channel_id), "type": 1, "last_message_id": None, "flags": 0,
                    "recipients": [self.users[user_id]]}
        return {"id": str(channel_id), "type": 0, "guild_id": str(GUILD_ID), "name": f"channel-{channel_id}",
                "position": 0, "permission_overwrites": [], "flags": 0, "topic": None, "nsfw": False,
                "parent_id": None, "last_message_id": None, "rate_limit_per_user": 0,
                "permissions": "0"}

    def _interaction_answer(self, ident: str, token: str, body: Any) -> web.Response:
        """Discord's interaction callback: one answer, within 3 s, with a known type."""
        found = self.interactions.get(ident)
        if found is None or found["payload"]["token"] != token:
            return _error(404, "Unknown interaction", 10062)
        if found["answers"]:
            found["refused"] = found.get("refused", 0) + 1
            self.new_post.set()
            return _error(400, "Interaction has already been acknowledged.", 40060)
        late = time.monotonic() - found["at"]
        if late > 3.0:
            return _error(404, "Unknown interaction", 10062)
        if (body or {}).get("type") not in (4, 5, 8):
            return _error(400, "Invalid Form Body: type", 50035)
        found["answers"].append({"after": late, **body})
        self.new_post.set()
        return web.Response(status=204)

    def _follow_up(self, token: str, body: Any) -> web.Response:
        """A follow-up message: to an answered interaction whose token lives (15 minutes)."""
        found = next((i for i in self.interactions.values() if i["payload"]["token"] == token), None)
        if found is None or (self.now() - found["created"]).total_seconds() > 900:
            return _error(401, "Invalid Webhook Token", 50027)
        if not found["answers"]:
            return _error(404, "Unknown Webhook", 10015)
        content = (body or {}).get("content") or ""
        if not content or len(content) > 2000:
            return _error(400, "Invalid Form Body: content must be 1 to 2000 characters", 50035)
        message = {"id": str(self.snowflake()), "content": content, "flags": (body or {}).get("flags", 0),
                   "channel_id": found["payload"]["channel_id"], "webhook_id": str(APP_ID),
                   "author": {"id": str(APP_ID), "username": "dealer", "bot": True}}
        found["follow_ups"].append(message)
        self.new_post.set()
        return _json(message)

    def follow_ups(self, interaction: dict[str, Any]) -> list[dict[str, Any]]:
        """The follow-up messages sent to an interaction (its payload), in order."""
        return self.interactions[interaction["id"]]["follow_ups"]

    def _dm_channel(self, user_id: int) -> int:
        if user_id not in self.dm_channels:
            channel = self.snowflake()
            self.dm_channels[user_id] = channel
            self.channels[channel] = []
        return self.dm_channels[user_id]

    # -- gateway ---------------------------------------------------------------------------

    def dispatch(self, event: str, data: dict[str, Any]) -> None:
        """Send a dispatch to the connected gateway, or keep it for a resume."""
        with self._lock:
            session = self.session
            if session is None:
                return
            session.seq += 1
            payload = {"op": 0, "t": event, "s": session.seq, "d": data}
            session.events.append(payload)
            ws = self.ws
            others = [(self.sessions[i], w) for i, w in self.others.items() if i != session.id]
        if ws is not None and not ws.closed:
            try:
                asyncio.run_coroutine_threadsafe(ws.send_str(json.dumps(payload)), self.loop).result(10)
            except ConnectionResetError:
                # The client is closing this connection (a client that stopped, its close
                # not yet seen here): the dispatch is not delivered, as with no connection
                # open, and stays kept for a resume, as Discord keeps it.
                pass
        for other, other_ws in others:
            with self._lock:
                other.seq += 1
                copy = {**payload, "s": other.seq}
            if not other_ws.closed:
                try:
                    asyncio.run_coroutine_threadsafe(other_ws.send_str(json.dumps(copy)), self.loop).result(10)
                except ConnectionResetError:
                    pass

    def drop(self, code: int = 4000) -> None:
        """Close the gateway connection (resumable by default); what is said meanwhile is replayed on RESUME."""
        with self._lock:
            ws, self.ws = self.ws, None
        self.connected.clear()
        if ws is not None:
            asyncio.run_coroutine_threadsafe(ws.close(code=code), self.loop).result(10)

    def hold(self) -> None:
        """Keep the gateway from answering a new connection until :meth:`release`."""
        self.gate.clear()

    def release(self) -> None:
        self.gate.set()

    def invalidate(self) -> None:
        """The next RESUME is refused: the client identifies anew, and what was said is lost to the gateway."""
        self._invalidate = True

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        while not self.gate.is_set():  # held: Discord unreachable for now
            await asyncio.sleep(0.01)
        self.connections += 1
        await ws.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": 41250}}))
        async for msg in ws:
            if msg.type != WSMsgType.TEXT:
                continue
            data = json.loads(msg.data)
            op = data.get("op")
            if op == 1:
                await ws.send_str(json.dumps({"op": 11}))
            elif op == 2:
                self.identifies += 1
                session = _Session(id=f"session-{self.identifies}")
                with self._lock:
                    self.sessions[session.id] = session
                    if self.session is not None and self.ws is not None and not self.ws.closed:
                        self.others[self.session.id] = self.ws
                    self.session = session
                    session.seq += 1
                    ready = {"op": 0, "t": "READY", "s": session.seq, "d": {
                        "v": 10, "user": {"id": str(BOT_ID), "username": "dealer", "discriminator": "0",
                                          "avatar": None, "bot": True},
                        "guilds": [], "session_id": session.id, "shard": [0, 1],
                        "resume_gateway_url": self.gateway_url,
                        "application": {"id": str(APP_ID), "flags": 0},
                    }}
                    self.ws = ws
                await ws.send_str(json.dumps(ready))
                self.connected.set()
            elif op == 6:
                self.resumes += 1
                d = data["d"]
                session = self.sessions.get(d.get("session_id"))
                if self._invalidate or session is None:
                    self._invalidate = False
                    with self._lock:
                        self.session = None
                    await ws.send_str(json.dumps({"op": 9, "d": False}))
                    continue
                with self._lock:
                    missed = [e for e in session.events if e["s"] > (d.get("seq") or 0)]
                    for event in missed:
                        await ws.send_str(json.dumps(event))
                    session.seq += 1
                    resumed = {"op": 0, "t": "RESUMED", "s": session.seq, "d": {}}
                    if self.session is not None and self.session is not session \
                            and self.ws is not None and not self.ws.closed:
                        self.others[self.session.id] = self.ws
                    self.others.pop(session.id, None)
                    self.session = session
                    self.ws = ws
                await ws.send_str(json.dumps(resumed))
                self.connected.set()
        with self._lock:
            self.others = {i: w for i, w in self.others.items() if w is not ws}
        return ws

    # -- REST -------------------------------------------------------------------------------

    def _limited(self, route: str) -> tuple[bool, dict[str, str], float]:
        """Count a request on ``route``'s fixed window: (refused, headers, retry_after)."""
        now = self.clock()
        with self._lock:
            window = self.windows.setdefault(route, _Window(start=now))
            if now >= window.start + self.window:
                window.start, window.count = now, 0
            reset_after = max(0.0, window.start + self.window - now)
            if window.count >= self.limit:
                return True, {"X-RateLimit-Limit": str(self.limit), "X-RateLimit-Remaining": "0",
                              "X-RateLimit-Reset-After": f"{reset_after:.3f}", "X-RateLimit-Bucket": route,
                              "Retry-After": f"{reset_after:.3f}", "X-RateLimit-Scope": "user"}, reset_after
            window.count += 1
            return False, {"X-RateLimit-Limit": str(self.limit),
                           "X-RateLimit-Remaining": str(self.limit - window.count),
                           "X-RateLimit-Reset-After": f"{reset_after:.3f}", "X-RateLimit-Bucket": route}, 0.0

    async def _rest(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        body = await request.json() if request.can_read_body else None
        response, route = self._answer(request, path, body)
        self.requests.append(Request(self.clock(), request.method, path, response.status, route, body))
        return response

    def _answer(self, request: web.Request, path: str, body: Any) -> tuple[web.Response, str]:
        parts = path.strip("/").split("/")
        method = request.method
        if parts[:1] == ["interactions"] and parts[3:] == ["callback"] and method == "POST":
            return self._interaction_answer(parts[1], parts[2], body), "interaction"
        if parts[:2] == ["webhooks", str(APP_ID)] and method == "POST":
            return self._follow_up(parts[2], body), "interaction"
        if parts[:1] == ["webhooks"] and method == "GET":
            if parts[2] != "hook-token":
                return _error(401, "Invalid Webhook Token", 50027), "webhook"
            return _json({"id": "900000000000000009", "channel_id": parts[1], "type": 1}), "webhook"
        if parts[:1] == ["webhooks"] and method == "POST":
            channel = int(parts[1])
            if parts[2] != "hook-token":
                return _error(401, "Invalid Webhook Token", 50027), "webhook"
            return self._post(channel, body, f"webhook/{channel}", webhook=True,
                              wait=request.query.get("wait") == "true"), "webhook"
        if request.headers.get("Authorization") != f"Bot {self.token}":
            return _error(401, "401: Unauthorized", 0), "auth"
        if path == "/users/@me" and method == "GET":
            return _json({"id": str(BOT_ID), "username": "dealer", "discriminator": "0",
                                      "avatar": None, "bot": True, "flags": 0}), "users/@me"
        if path == "/oauth2/applications/@me":
            flags = (1 << 19) if self.message_content_intent else 0
            return _json({
                "id": str(APP_ID), "name": "dealer", "description": "", "icon": None, "rpc_origins": [],
                "bot_public": False, "bot_require_code_grant": False, "verify_key": "0" * 64,
                "owner": {"id": "1", "username": "host", "discriminator": "0", "avatar": None},
                "flags": flags, "team": None, "summary": "",
            }), "applications/@me"
        if parts[:1] == ["applications"] and parts[-1] == "commands":
            guild = parts[3] if len(parts) == 5 else None
            if method == "PUT":
                self.commands[guild] = [{**c, "id": str(900000000000000100 + i), "application_id": str(APP_ID),
                                         "version": "1", **({"guild_id": guild} if guild else {})}
                                        for i, c in enumerate(body or [])]
            return _json(self.commands.get(guild, [])), "commands"
        if path in ("/gateway", "/gateway/bot"):
            return _json({"url": self.gateway_url, "shards": 1, "session_start_limit": {
                "total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}}), "gateway"
        if path == "/users/@me/channels" and method == "POST":
            user = int(body["recipient_id"])
            if user not in self.users:
                return _error(400, "Invalid Recipient(s)", 50033), "dm"
            channel = self._dm_channel(user)
            return _json({"id": str(channel), "type": 1, "recipients": [self.users[user]]}), "dm"
        if parts[:1] == ["channels"] and len(parts) >= 2:
            channel = int(parts[1])
            if channel not in self.channels:
                return _error(404, "Unknown Channel", 10003), f"channel/{channel}"
            if len(parts) == 2 and method == "GET":
                guild = {"guild_id": str(GUILD_ID)} if channel in self.guild_channels else {}
                return _json({"id": str(channel), "type": 0 if channel in self.guild_channels else 1,
                              "name": f"channel-{channel}", **guild}), f"channel/{channel}"
            if parts[2:] == ["messages"] and method == "POST":
                return self._post(channel, body, f"channel/{channel}"), f"channel/{channel}"
            if parts[2:] == ["messages"] and method == "GET":
                after = int(request.query.get("after", "0"))
                limit = min(100, int(request.query.get("limit", "50")))
                found = [m for m in self.channels[channel] if int(m["id"]) > after]
                found = found[:limit]
                return _json(list(reversed(found))), f"channel/{channel}/history"
        return _error(404, f"no such endpoint in the fake: {method} {path}", 0), "unknown"

    def _post(self, channel: int, body: Any, route: str, webhook: bool = False, wait: bool = True) -> web.Response:
        refused, headers, retry_after = self._limited(route)
        if refused:
            return _json({"message": "You are being rate limited.", "retry_after": retry_after,
                                      "global": False}, status=429, headers=headers)
        content = (body or {}).get("content") or ""
        if not content or len(content) > 2000:
            return _error(400, "Invalid Form Body: content must be 1 to 2000 characters", 50035, headers)
        nonce = (body or {}).get("nonce")
        if nonce and (body or {}).get("enforce_nonce") and (channel, nonce) in self.nonces:
            return _json(self.nonces[(channel, nonce)], headers=headers)
        author = {"id": str(BOT_ID), "username": "dealer", "discriminator": "0", "avatar": None, "bot": True}
        extra: dict[str, Any] = {"allowed_mentions": (body or {}).get("allowed_mentions")}
        if webhook:
            extra["webhook_id"] = "900000000000000009"
        if nonce:  # Discord gives the nonce back in the message it created
            extra["nonce"] = nonce
        message = self._message(channel, author, content, **extra)
        if nonce:
            self.nonces[(channel, nonce)] = message
        self.new_post.set()
        if webhook and not wait:
            return web.Response(status=204, headers=headers)
        return _json(message, headers=headers)

    def pinged(self, message: dict[str, Any]) -> list[str]:
        """Whom a posted message would notify: only the listed users its text mentions (``allowed_mentions``)."""
        allowed = message.get("allowed_mentions")
        text = message["content"]
        import re

        mentioned = re.findall(r"<@!?(\d+)>", text)
        if allowed is None:
            found = mentioned + (["@everyone"] if "@everyone" in text or "@here" in text else [])
            return found
        parse = set(allowed.get("parse") or [])
        users = set(allowed.get("users") or [])
        found = [u for u in mentioned if "users" in parse or u in users]
        if "everyone" in parse and ("@everyone" in text or "@here" in text):
            found.append("@everyone")
        return found


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """A JSON answer with Discord's exact content type (discord.py reads JSON only then)."""
    return web.Response(body=json.dumps(data).encode("utf-8"), status=status,
                        headers={**(headers or {}), "Content-Type": "application/json"})


def _error(status: int, message: str, code: int, headers: dict[str, str] | None = None) -> web.Response:
    return _json({"message": message, "code": code}, status=status, headers=headers or {})
