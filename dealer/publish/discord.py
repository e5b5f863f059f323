"""Discord out: posts through Discord's REST API v10 (httpx; dealer-moderator[discord],
docs/DISCORD.md), by a bot token or a webhook URL.

Each message pings exactly the linked players the post means to ping (``allowed_mentions``)
and nobody else, whatever its text holds. A bot's message carries an enforced ``nonce`` from
the post's key, so Discord drops a re-send; a webhook's cannot. Rate limits: a token bucket
for the whole bot and a pause per route bucket from Discord's headers; a wait over
:data:`MAX_WAIT` gives the post back to the outbox with its ``retry_after``.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from typing import Any, Callable

import httpx

from dealer.formats import DISCORD_LIMIT, split, to_discord
from dealer.publish.base import DeliveryFailed, OutgoingPost, Publisher, TokenBucket

log = logging.getLogger(__name__)

API = "https://discord.com/api/v10"
MAX_WAIT = 10.0
"""Seconds of a rate-limit wait spent in place; a longer one gives the post back."""
USER_AGENT = "DiscordBot (https://github.com/dealer, 0.1) dealer"


class DiscordError(DeliveryFailed):
    """Discord refused a request (the message says what to fix where it can)."""


def nonce(key: str, part: int) -> str:
    """The nonce of one part of a post: 25 characters at most, as Discord allows."""
    return hashlib.blake2b(f"{key}#{part}".encode("utf-8"), digest_size=12).hexdigest()[:25]


class DiscordRest:
    """Discord's REST API with its rate limits: the bot's bucket, each route's pause, a ``429``'s."""

    def __init__(self, token: str = "", *, api_url: str = API, rate: float = 45.0,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, max_wait: float = MAX_WAIT,
                 transport: httpx.BaseTransport | None = None, timeout: float = 15.0) -> None:
        self.token = token
        self.api_url = (api_url or API).rstrip("/")
        self.clock = clock
        self.sleep = sleep
        self.max_wait = max_wait
        self.bucket = TokenBucket(rate, clock=clock, sleep=sleep)
        self.routes: dict[str, TokenBucket] = {}
        self.limited = 0
        """How many ``429`` answers this client met."""
        self.requests = 0
        self._lock = threading.Lock()
        headers = {"User-Agent": USER_AGENT}
        if token:
            headers["Authorization"] = f"Bot {token}"
        self.http = httpx.Client(headers=headers, timeout=timeout, transport=transport)

    def _route(self, key: str) -> TokenBucket:
        with self._lock:
            if key not in self.routes:
                # A route's own quota is learnt from its headers: only the pause is used.
                self.routes[key] = TokenBucket(1e9, clock=self.clock, sleep=self.sleep)
            return self.routes[key]

    def request(self, method: str, url: str, route: str, **kwargs: Any) -> Any:
        """Send one request (an absolute ``url`` or a path) within the limits; return its JSON, or
        raise :class:`DeliveryFailed` or :class:`DiscordError`."""
        if not url.startswith("http"):
            url = self.api_url + url
        bucket = self._route(route)
        while True:
            bucket.take(self.max_wait)
            self.bucket.take(self.max_wait)
            try:
                self.requests += 1
                answer = self.http.request(method, url, **kwargs)
            except httpx.HTTPError as exc:
                raise DeliveryFailed(f"Discord unreachable: {type(exc).__name__}: {exc}") from exc
            self._read_limits(answer, bucket)
            if answer.status_code == 429:
                self.limited += 1
                retry_after = _retry_after(answer)
                body = _json(answer)
                (self.bucket if body.get("global") or answer.headers.get("X-RateLimit-Global") else bucket).pause(retry_after)
                log.warning("Discord rate limit on %s: retry after %.2f s", route, retry_after)
                if retry_after > self.max_wait:
                    raise DeliveryFailed(f"Discord rate limit: retry after {retry_after:.1f} s",
                                         retry_after=retry_after)
                continue
            if answer.status_code >= 500:
                raise DeliveryFailed(f"Discord answered {answer.status_code}; tried again later")
            if answer.status_code == 401:
                raise DiscordError("Discord refused the bot token (401): check DEALER_DISCORD_TOKEN")
            if answer.status_code == 403:
                raise DiscordError(f"Discord forbids this (403) on {route}: {_message(answer)}; "
                                   "check the bot's permissions there (docs/DISCORD.md)")
            if answer.status_code == 404:
                raise DiscordError(f"Discord does not know {route} (404): {_message(answer)}; "
                                   "check the route's id")
            if answer.status_code >= 400:
                raise DiscordError(f"Discord refused the request ({answer.status_code}): {_message(answer)}")
            if not answer.content:
                return None
            try:
                return answer.json()
            except ValueError as exc:
                raise DeliveryFailed(f"Discord answered {answer.status_code} with no JSON") from exc

    def _read_limits(self, answer: httpx.Response, bucket: TokenBucket) -> None:
        """A spent quota (``X-RateLimit-Remaining: 0``) pauses the route until its reset."""
        remaining = answer.headers.get("X-RateLimit-Remaining")
        reset_after = answer.headers.get("X-RateLimit-Reset-After")
        if remaining is not None and reset_after is not None:
            try:
                if int(float(remaining)) <= 0:
                    bucket.pause(float(reset_after))
            except ValueError:
                pass

    # -- the endpoints ----------------------------------------------------------------------

    def me(self) -> dict[str, Any]:
        """``GET /users/@me``: the bot's own user."""
        return self.request("GET", "/users/@me", "users/@me")

    def post_message(self, channel_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        """``POST /channels/{id}/messages``."""
        return self.request("POST", f"/channels/{channel_id}/messages", f"channel/{channel_id}", json=payload)

    def open_dm(self, user_id: str) -> str:
        """``POST /users/@me/channels``: the DM channel id of a user."""
        return str(self.request("POST", "/users/@me/channels", "users/@me/channels",
                                json={"recipient_id": user_id})["id"])

    def execute_webhook(self, url: str, payload: dict[str, Any]) -> dict[str, Any]:
        """``POST {webhook}?wait=true``."""
        return self.request("POST", url, "webhook", params={"wait": "true"}, json=payload)

    def history(self, channel_id: str, after: str) -> list[dict[str, Any]]:
        """Every message of a channel after the message id ``after``, oldest first."""
        found: list[dict[str, Any]] = []
        while True:
            page = self.request("GET", f"/channels/{channel_id}/messages", f"channel/{channel_id}/history",
                                params={"after": after, "limit": 100}) or []
            page = sorted(page, key=lambda m: int(m["id"]))
            found.extend(page)
            if len(page) < 100:
                return found
            after = page[-1]["id"]

    def close(self) -> None:
        """Close the HTTP connections."""
        self.http.close()


def _retry_after(answer: httpx.Response) -> float:
    """Seconds a ``429`` asks to wait: its body's ``retry_after``, else ``Retry-After``."""
    body = _json(answer)
    for value in (body.get("retry_after"), answer.headers.get("Retry-After")):
        try:
            if value is not None:
                return max(0.0, float(value))
        except (TypeError, ValueError):
            continue
    return 1.0


def _json(answer: httpx.Response) -> dict[str, Any]:
    try:
        data = answer.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {"items": data} if isinstance(data, list) else {}


def _message(answer: httpx.Response) -> str:
    body = _json(answer)
    return str(body.get("message") or answer.text[:200] or answer.reason_phrase)


class DiscordPublisher(Publisher):
    """Posts to Discord: a routed channel, a linked player's DMs, or the webhook."""

    format = "discord"

    def __init__(self, rest: DiscordRest, webhook_url: str = "") -> None:
        self.rest = rest
        self.webhook_url = webhook_url
        self.dm_channels: dict[str, str] = {}
        self.follow_up: Callable[[OutgoingPost], tuple[str, str] | None] | None = None
        """The interaction (application id, token) a private post answers as its follow-up,
        while it may (:func:`dealer.shell.interactions.follow_up_of`); else the post is a DM."""
        self._asked: tuple[str, tuple[str, str] | None] = ("", None)

    def send(self, post: OutgoingPost) -> str:
        """A post without a route: refused (Discord needs to know where)."""
        raise DeliveryFailed("a Discord post needs a route (DEALER_ROUTES)")

    def dedupes(self, post: OutgoingPost, destination: Any = None) -> bool:
        """A bot's message carries a nonce Discord enforces; a webhook's repeat is a second message."""
        if destination is not None and getattr(destination, "arg", "") == "webhook":
            return False
        return self._interaction(post, destination) is None

    def _interaction(self, post: OutgoingPost, destination: Any) -> tuple[str, str] | None:
        if self.follow_up is None or getattr(destination, "arg", "") != "dm":
            return None
        if self._asked[0] != post.key:  # sent, then asked whether it dedupes: one read
            self._asked = (post.key, self.follow_up(post))
        return self._asked[1]

    def send_to(self, post: OutgoingPost, destination: Any, fmt: str) -> str:
        """Send ``post`` to a ``discord:`` destination split at 2,000 characters, each part once;
        return the id of its first message."""
        pings = _pings(post)
        text = to_discord(post.body)
        if pings:
            text = text.rstrip("\n") + "\n" + " ".join(f"<@{i}>" for i in pings)
        parts = split(text, DISCORD_LIMIT)
        interaction = self._interaction(post, destination)
        target = self._target(post, destination) if interaction is None else "follow-up"
        ids: dict[int, str] = dict(post.parts_sent)
        for index, part in enumerate(parts):
            if index in ids:
                continue
            payload: dict[str, Any] = {
                "content": part,
                "allowed_mentions": {"parse": [], "users": [i for i in pings if f"<@{i}>" in part]},
            }
            if interaction is not None:
                app, token = interaction
                message = self.rest.request("POST", f"/webhooks/{app}/{token}", "interaction",
                                            json={**payload, "flags": 64})
            elif target == "webhook":
                if not self.webhook_url:
                    raise DiscordError("the discord:webhook route needs DEALER_DISCORD_WEBHOOK_URL")
                message = self.rest.execute_webhook(self.webhook_url, payload)
            else:
                payload.update(nonce=nonce(post.key, index), enforce_nonce=True)
                message = self.rest.post_message(target, payload)
            ids[index] = str(message["id"])
            if len(parts) > 1 and post.record_part is not None:
                post.record_part(index, ids[index])
        return ids[0]

    def _target(self, post: OutgoingPost, destination: Any) -> str:
        """The channel id to post in, or ``webhook``."""
        if destination.arg == "webhook":
            return "webhook"
        if destination.discord_channel is not None:
            return str(destination.discord_channel)
        user = _dm_user(post)
        if user is None:
            raise DiscordError(f"{post.recipient} has no linked Discord account to send a DM to")
        if user not in self.dm_channels:
            self.dm_channels[user] = self.rest.open_dm(user)
        return self.dm_channels[user]


def _dm_user(post: OutgoingPost) -> str | None:
    """The Discord user a private post goes to: an account recipient, or the linked one."""
    recipient = post.recipient or ""
    if recipient.startswith("discord:") and recipient[8:].isdigit():
        return recipient[8:]
    return post.accounts.get(recipient, {}).get("discord")


def _pings(post: OutgoingPost) -> list[str]:
    """The Discord ids of the players the post means to ping who have a linked account."""
    found = []
    for name in post.mentions:
        account = post.accounts.get(name, {}).get("discord")
        if account and account not in found:
            found.append(account)
    return found
