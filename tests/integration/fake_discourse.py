"""A local fake of the parts of Discourse dealer uses, served over real HTTP by uvicorn.

The API: ``POST /posts.json`` (a reply in a topic, or a new PM), ``GET /posts.json`` (the
latest posts, newest first, paged with ``before``), ``GET /posts/ID.json``; each checks
``Api-Key`` and ``Api-Username`` and answers ``429`` with ``Retry-After`` and Discourse's
body (``{"errors": [...], "error_type": "rate_limit", "extras": {"wait_seconds": N}}``)
while told to. And the webhooks: what a player does on the site (posting, editing,
deleting, liking) comes back as the delivery Discourse would send (headers and body, the
body signed with the webhook secret the way Discourse signs it).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

API_KEY = "test-api-key"
BOT = "dealer_bot"


def iso(at: datetime) -> str:
    return at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


@dataclass
class FakeDiscourse:
    secret: str
    now: datetime
    page_size: int = 50
    posts: dict[int, dict[str, Any]] = field(default_factory=dict)
    topics: dict[int, dict[str, Any]] = field(default_factory=dict)
    users: dict[str, int] = field(default_factory=dict)
    rate_limited: int = 0
    """Requests to answer 429 (each with Retry-After: retry_after)."""
    retry_after: int = 7
    requests: list[tuple[str, str]] = field(default_factory=list)
    _next_post: int = 100
    _next_topic: int = 10

    def topic(self, title: str, archetype: str = "regular", recipients: tuple[str, ...] = ()) -> int:
        self._next_topic += 1
        self.topics[self._next_topic] = {"id": self._next_topic, "title": title, "archetype": archetype,
                                         "recipients": recipients, "count": 0}
        return self._next_topic

    def user(self, username: str) -> dict[str, Any]:
        if username not in self.users:
            self.users[username] = len(self.users) + 2
        return {"id": self.users[username], "username": username, "name": username.title(),
                "avatar_template": f"/user_avatar/forum.example/{username}/{{size}}/1_2.png"}

    def _post(self, username: str, topic_id: int, raw: str, reply_to: int | None = None) -> dict[str, Any]:
        self._next_post += 1
        topic = self.topics[topic_id]
        topic["count"] += 1
        user = self.user(username)
        post = {
            "id": self._next_post, "name": user["name"], "username": username,
            "avatar_template": user["avatar_template"], "created_at": iso(self.now),
            "cooked": f"<p>{raw}</p>", "post_number": topic["count"], "post_type": 1,
            "updated_at": iso(self.now), "reply_count": 0, "reply_to_post_number": reply_to,
            "quote_count": 0, "incoming_link_count": 0, "reads": 1, "score": 0, "topic_id": topic_id,
            "topic_slug": topic["title"].lower().replace(" ", "-"), "topic_title": topic["title"],
            "category_id": None if topic["archetype"] == "private_message" else 5,
            "display_username": user["name"], "version": 1, "raw": raw, "user_id": user["id"],
            "hidden": False, "trust_level": 1, "deleted_at": None, "user_deleted": False,
            "edit_reason": None, "wiki": False, "topic_posts_count": topic["count"],
            "topic_archetype": topic["archetype"],
        }
        self.posts[post["id"]] = post
        return post

    # -- what players do, as the webhook deliveries Discourse sends ----------------------

    def _delivery(self, event: str, kind: str, payload: dict[str, Any]) -> tuple[dict[str, str], bytes]:
        body = json.dumps(payload).encode("utf-8")
        headers = {
            "Content-Type": "application/json",
            "X-Discourse-Instance": "https://forum.example",
            "X-Discourse-Event-Id": str(uuid.uuid4().int % 10**6),
            "X-Discourse-Event-Type": kind,
            "X-Discourse-Event": event,
            "X-Discourse-Event-Signature": "sha256=" + hmac.new(self.secret.encode(), body, hashlib.sha256).hexdigest(),
        }
        return headers, body

    def player_posts(self, username: str, topic_id: int, raw: str) -> tuple[int, tuple[dict[str, str], bytes]]:
        post = self._post(username, topic_id, raw)
        return post["id"], self._delivery("post_created", "post", {"post": post})

    def player_edits(self, post_id: int, raw: str) -> tuple[dict[str, str], bytes]:
        post = self.posts[post_id]
        post.update(raw=raw, cooked=f"<p>{raw}</p>", updated_at=iso(self.now), version=post["version"] + 1)
        return self._delivery("post_edited", "post", {"post": post})

    def player_deletes(self, post_id: int) -> tuple[dict[str, str], bytes]:
        post = self.posts[post_id]
        post.update(deleted_at=iso(self.now), user_deleted=True)
        return self._delivery("post_destroyed", "post", {"post": post})

    def player_likes(self, username: str, post_id: int) -> tuple[dict[str, str], bytes]:
        return self._delivery("post_liked", "like", {"like": {"post": self.posts[post_id], "user": self.user(username)}})

    # -- the API -------------------------------------------------------------------------

    def _refuse(self, request: Request) -> JSONResponse | None:
        self.requests.append((request.method, request.url.path))
        if request.headers.get("Api-Key") != API_KEY or request.headers.get("Api-Username") != BOT:
            return JSONResponse({"errors": ["You are not permitted to view the requested resource."],
                                 "error_type": "invalid_access"}, status_code=403)
        if self.rate_limited > 0:
            self.rate_limited -= 1
            return JSONResponse(
                {"errors": ["You’ve performed this action too many times. Please wait 7 seconds before trying again."],
                 "error_type": "rate_limit", "extras": {"wait_seconds": self.retry_after}},
                status_code=429, headers={"Retry-After": str(self.retry_after)})
        return None

    async def create_post(self, request: Request) -> JSONResponse:
        refused = self._refuse(request)
        if refused:
            return refused
        data = await request.json()
        raw = str(data.get("raw", ""))
        if len(raw.strip()) < 1:
            return JSONResponse({"errors": ["Body is too short"]}, status_code=422)
        if data.get("archetype") == "private_message":
            recipients = tuple(str(data["target_recipients"]).split(","))
            unknown = [r for r in recipients if r not in self.users]
            if unknown:
                return JSONResponse({"errors": [f"{unknown[0]} is not a user"]}, status_code=422)
            topic_id = self.topic(str(data["title"]), "private_message", recipients)
        else:
            topic_id = int(data["topic_id"])
            if topic_id not in self.topics:
                return JSONResponse({"errors": ["topic not found"]}, status_code=404)
        return JSONResponse(self._post(BOT, topic_id, raw, data.get("reply_to_post_number")))

    async def latest(self, request: Request) -> JSONResponse:
        refused = self._refuse(request)
        if refused:
            return refused
        before = int(request.query_params.get("before") or 10**9)
        public = [p for p in sorted(self.posts.values(), key=lambda p: -p["id"])
                  if p["id"] < before and p["topic_archetype"] != "private_message" and not p["deleted_at"]]
        return JSONResponse({"latest_posts": public[:self.page_size]})

    async def show(self, request: Request) -> JSONResponse:
        refused = self._refuse(request)
        if refused:
            return refused
        post = self.posts.get(int(request.path_params["post_id"]))
        if post is None:
            return JSONResponse({"errors": ["not found"]}, status_code=404)
        return JSONResponse(post)

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/posts.json", self.create_post, methods=["POST"]),
            Route("/posts.json", self.latest, methods=["GET"]),
            Route("/posts/{post_id:int}.json", self.show, methods=["GET"]),
        ])


class Served:
    """An ASGI app served by uvicorn on a free local port, in a thread."""

    def __init__(self, app: Any) -> None:
        import socket

        import uvicorn

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                                    lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        for _ in range(400):
            if self.server.started:
                break
            time.sleep(0.01)  # the server starting up, not a test waiting on a clock

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
