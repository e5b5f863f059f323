"""The Discourse publisher (dealer-moderator[discourse], httpx; docs/DISCOURSE.md): a public
post replies in its channel's topic, a private one is a PM, or goes into the PM topic it
answers. A ``429`` is waited out (its ``retry_after``); Discourse takes no idempotency key,
so delivery commits right after each post."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

from dealer.formats import render_for
from dealer.publish.base import DeliveryFailed, OutgoingPost, Publisher


@dataclass(frozen=True)
class Thread:
    """Where a reply goes on Discourse: a topic, and the post number it answers."""

    topic_id: int
    reply_to_post_number: int | None = None


@dataclass
class DiscoursePublisher(Publisher):
    """Posts to a Discourse site. ``topics`` maps game channels to topic ids."""

    drops_repeats = False  # Discourse takes no idempotency key: a repeat is a second post

    base_url: str
    api_key: str
    username: str
    topics: Mapping[str, int] = field(default_factory=dict)
    client: Any = None
    """An ``httpx.Client`` (made from ``base_url`` when None)."""
    thread: Callable[[OutgoingPost], Thread | None] | None = None
    """Finds the PM topic a private reply belongs in (set by the shell)."""
    usernames: Callable[[str], str | None] | None = None
    """A player's Discourse username (default: the player's name)."""
    timeout: float = 30.0

    def __post_init__(self) -> None:
        if self.client is None:
            import httpx

            self.client = httpx.Client(base_url=self.base_url.rstrip("/"), timeout=self.timeout)

    def _headers(self) -> dict[str, str]:
        return {"Api-Key": self.api_key, "Api-Username": self.username, "Accept": "application/json"}

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """One API call; its JSON. A refusal raises :class:`DeliveryFailed`."""
        import httpx

        try:
            response = self.client.request(method, path, headers=self._headers(), **kwargs)
        except httpx.HTTPError as exc:
            raise DeliveryFailed(f"Discourse {method} {path}: {type(exc).__name__}: {exc}") from exc
        if response.status_code == 429:
            wait = _retry_after(response)
            raise DeliveryFailed(f"Discourse rate limit: try again in {wait:g} s", retry_after=wait)
        if response.status_code >= 400:
            raise DeliveryFailed(f"Discourse answered {response.status_code} to {method} {path}: "
                                 f"{_errors(response)}")
        try:
            return response.json()
        except ValueError:
            return {}

    def payload(self, post: OutgoingPost, topic: int | None = None) -> dict[str, Any]:
        """The ``POST /posts.json`` body of ``post`` (a public one in ``topic`` when given)."""
        raw = post.body.rstrip("\n")
        if post.recipient is None:
            topic = topic or self.topics.get(post.channel)
            if topic is None:
                raise DeliveryFailed(f"no Discourse topic for {post.channel} (DEALER_DISCOURSE_TOPICS)")
            if post.subject:
                raw = f"**{post.subject}**\n\n{raw}"
            return {"topic_id": topic, "raw": raw}
        thread = self.thread(post) if self.thread else None
        if thread is not None:
            body: dict[str, Any] = {"topic_id": thread.topic_id, "raw": raw}
            if thread.reply_to_post_number:
                body["reply_to_post_number"] = thread.reply_to_post_number
            return body
        username = self.username_of(post)
        if not username:
            raise DeliveryFailed(f"no Discourse user for {post.recipient}")
        title = " ".join((post.subject or post.kind.replace("_", " ")).split())[:200]
        return {"title": title, "raw": raw, "archetype": "private_message", "target_recipients": username}

    def username_of(self, post: OutgoingPost) -> str | None:
        """The Discourse user a private post goes to: the linked account, the recipient when it is
        one, else the player's name."""
        recipient = post.recipient or ""
        if recipient.startswith("discourse:"):
            return recipient.split(":", 1)[1]
        linked = post.accounts.get(recipient, {}).get("discourse")
        return linked or (self.usernames or (lambda name: name))(recipient)

    def send_to(self, post: OutgoingPost, destination: object, fmt: str) -> str:
        """A routed post: ``discourse:topic/ID`` posts a public post in that topic."""
        arg = str(getattr(destination, "arg", "") or "")
        topic = int(arg.split("/", 1)[1]) if arg.startswith("topic/") else None
        return self.send(replace(post, body=render_for(fmt, post.body)), topic)

    def send(self, post: OutgoingPost, topic: int | None = None) -> str:
        """Post ``post`` (in ``topic``, else its channel's); return ``post/ID``, the Discourse post's id."""
        created = self.request("POST", "/posts.json", json=self.payload(post, topic))
        if not isinstance(created, dict) or "id" not in created:
            raise DeliveryFailed(f"Discourse took the post but gave no id: {str(created)[:200]}")
        return f"post/{created['id']}"

    def latest_posts(self, before: int | None = None) -> list[dict[str, Any]]:
        """``GET /posts.json``: the site's latest posts, newest first (``before`` an id)."""
        params = {"before": before} if before else None
        found = self.request("GET", "/posts.json", params=params)
        return list(found.get("latest_posts") or []) if isinstance(found, dict) else []

    def close(self) -> None:
        """Close the HTTP client."""
        self.client.close()


def _retry_after(response: Any) -> float:
    header = response.headers.get("Retry-After", "")
    try:
        return max(float(header), 0.0)
    except ValueError:
        pass
    try:
        return max(float(response.json().get("extras", {}).get("wait_seconds", 0)), 0.0) or 10.0
    except (ValueError, AttributeError, TypeError):
        return 10.0


def _errors(response: Any) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(data, dict) and data.get("errors"):
        return "; ".join(str(e) for e in data["errors"])[:300]
    return str(data)[:200]
