"""Discourse's outgoing webhooks read as inbound messages (pure; docs/DISCOURSE.md):
``post_created`` in a mapped topic or a PM, ``post_edited``, ``post_destroyed`` and
``post_liked`` (the 👍 vote, GH-20; an unlike sends no webhook). dealer's own posts, other
topics and other events are none; the sender is ``discourse:USERNAME``."""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime
from typing import Any, Mapping

from dealer.clock import parse_time
from dealer.inbox.base import InboxMessage, Unreadable

POST_EVENTS = ("post_created", "post_edited", "post_destroyed")
LIKE = "👍"
"""The reaction a Discourse like stands for."""


def signature(secret: str, body: bytes) -> str:
    """The ``X-Discourse-Event-Signature`` of ``body``."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def signed(secret: str, body: bytes, header: str) -> bool:
    """Whether ``header`` is ``body``'s signature under ``secret`` (compared in constant time)."""
    return hmac.compare_digest(signature(secret, body).encode(), header.strip().encode("utf-8", "replace"))


def message_from_event(event: str, payload: Mapping[str, Any], topics: Mapping[int, str],
                       own_username: str, received: datetime) -> InboxMessage | None:
    """The message a webhook event carries, or None; :class:`Unreadable` for a wrong shape."""
    try:
        if event in POST_EVENTS:
            return _post_event(event, payload["post"], topics, own_username, received)
        if event == "post_liked":
            like = payload["like"]
            return _like(like["post"], like["user"], topics, own_username, received)
    except KeyError as exc:
        raise Unreadable(f"a {event} payload without {exc}") from None
    except Exception as exc:  # any field one delivery cannot give sets that delivery aside
        raise Unreadable(f"a {event} payload dealer cannot read: {type(exc).__name__}: {exc}") from None
    return None


def post_number(post: Any) -> int | None:
    """A post's id as a number, or None when the post gives none (a catch-up skips it)."""
    try:
        return int(post["id"])
    except Exception:
        return None


def channel_of(post: Mapping[str, Any], topics: Mapping[int, str]) -> str | None:
    """The game channel of a post: ``pm`` in a PM, the mapped channel of its topic, else None."""
    if post.get("topic_archetype") == "private_message":
        return "pm"
    return topics.get(int(post["topic_id"]))


def _post_event(event: str, post: Mapping[str, Any], topics: Mapping[int, str], own: str,
                received: datetime) -> InboxMessage | None:
    channel = channel_of(post, topics)
    username = str(post["username"])
    if channel is None or username.lower() == own.lower():
        return None
    sender = account_of(username)
    ident = f"post/{int(post['id'])}"
    if event == "post_created":
        return InboxMessage(id=ident, sender=sender, channel=channel, body=str(post.get("raw") or ""),
                            sent_at=_time(post.get("created_at"), received))
    if event == "post_edited":
        updated = str(post.get("updated_at") or "")
        return InboxMessage(id=f"{ident}/edit/{updated}"[:200], sender=sender, channel=channel, kind="edit",
                            target=ident, body=str(post.get("raw") or ""), sent_at=_time(updated, received))
    return InboxMessage(id=f"{ident}/delete", sender=sender, channel=channel, kind="delete", target=ident,
                        sent_at=_time(post.get("deleted_at") or post.get("updated_at"), received))


def _like(post: Mapping[str, Any], user: Mapping[str, Any], topics: Mapping[int, str], own: str,
          received: datetime) -> InboxMessage | None:
    channel = channel_of(post, topics)
    username = str(user["username"])
    if channel is None or username.lower() == own.lower():
        return None
    return InboxMessage(id=f"like/{int(post['id'])}/{int(user['id'])}", sender=account_of(username), channel=channel,
                        kind="reaction", target=f"post/{int(post['id'])}", emoji=LIKE, sent_at=received)


def account_of(username: str) -> str:
    """``discourse:USERNAME`` in lower case (Discourse's usernames are unique whatever the case)."""
    return f"discourse:{username.lower()}"


def _time(value: Any, received: datetime) -> datetime:
    if isinstance(value, str) and value:
        try:
            return parse_time(value)
        except (ValueError, OverflowError):
            # A time off the calendar (year 9999 at -05:00) is refused, as the directory
            # inbox refuses it: the delivery is set aside with why (400).
            raise ValueError(f"its time {value[:60]!r} cannot be read") from None
    return received


def parse_topics(setting: str) -> dict[int, str]:
    """``#proposals=12;#the-raceway=34`` as {12: "#proposals", ...}; ``ValueError`` names a wrong entry."""
    topics: dict[int, str] = {}
    for entry in (part.strip() for part in setting.replace("\n", ";").split(";")):
        if not entry:
            continue
        channel, sep, topic = entry.partition("=")
        if not sep or not topic.strip().isdigit() or not channel.strip():
            raise ValueError(f"DEALER_DISCOURSE_TOPICS: write CHANNEL=TOPIC_ID, not {entry!r}")
        topics[int(topic.strip())] = channel.strip()
    return topics
