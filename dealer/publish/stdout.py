"""The stdout publisher: prints each post (for the demo and for watching a daemon)."""

from __future__ import annotations

import sys
from typing import TextIO

from dealer.clock import format_utc
from dealer.publish.base import OutgoingPost, Publisher


class StdoutPublisher(Publisher):
    """Prints a header line and the body of each post."""

    drops_repeats = False  # a post printed twice is printed twice

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream

    def send(self, post: OutgoingPost) -> str:
        """Print the post."""
        out = self.stream or sys.stdout
        where = f"PM to {post.recipient}" if post.recipient else post.channel
        out.write(f"── {where} · {post.subject} · {format_utc(post.created_at)} ──\n{post.body}\n")
        out.flush()
        return f"stdout:{post.id}"
