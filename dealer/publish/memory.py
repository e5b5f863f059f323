"""A publisher that keeps every post in memory: for tests and ``dealer demo``."""

from __future__ import annotations

from dataclasses import dataclass, field

from dealer.publish.base import DeliveryFailed, OutgoingPost, Publisher


@dataclass
class MemoryPublisher(Publisher):
    """Keeps every delivered post in :attr:`posts` (by key, so re-sends do not duplicate)."""

    posts: dict[str, OutgoingPost] = field(default_factory=dict)
    fail_next: int = 0

    def send(self, post: OutgoingPost) -> str:
        """Store the post (or fail, while ``fail_next`` is positive)."""
        if self.fail_next > 0:
            self.fail_next -= 1
            raise DeliveryFailed("the fake publisher was told to fail")
        self.posts[post.key] = post
        return f"memory:{post.id}"

    def delivered(self) -> list[OutgoingPost]:
        """Every post in publication order."""
        return sorted(self.posts.values(), key=lambda p: p.id)
