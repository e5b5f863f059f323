"""The directory publisher (DESIGN.md): one JSON file per post, named in publication order."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from dealer.clock import iso
from dealer.publish.base import DeliveryFailed, OutgoingPost, Publisher


class DirectoryPublisher(Publisher):
    """Writes ``<outbox id>-<created>.json`` atomically; a re-send rewrites the same file."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)

    def filename(self, post: OutgoingPost) -> str:
        """Sortable by ``ls`` in publication order: the outbox id first, zero-padded."""
        return f"{post.id:012d}-{post.created_at:%Y%m%dT%H%M%S}.json"

    def send(self, post: OutgoingPost) -> str:
        """Write the post's file (write to a temporary name, then rename)."""
        name = self.filename(post)
        data = {
            "id": post.id,
            "key": post.key,
            "channel": post.channel,
            "recipient": post.recipient,
            "game": post.game,
            "kind": post.kind,
            "subject": post.subject,
            "body": post.body,
            "created_at": iso(post.created_at),
        }
        payload = (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
        # A temporary name of its own (two daemons, or two threads of one, may write the
        # same post at once): each rename then puts one complete file in place. Not
        # mkstemp: the file keeps the permissions the umask gives, as the reader expects.
        temporary = self.path / f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            temporary.write_bytes(payload)
            os.replace(temporary, self.path / name)
        except OSError as exc:
            temporary.unlink(missing_ok=True)
            raise DeliveryFailed(f"cannot write {name}: {exc}") from exc
        return name
