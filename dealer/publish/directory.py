"""The directory publisher (DESIGN.md): one JSON file per post, named in publication order."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path

from dealer.clock import iso
from dealer.publish.base import DeliveryFailed, OutgoingPost, Publisher

log = logging.getLogger(__name__)

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC

ORPHAN_AGE = 60.0
"""Seconds after which a temporary file in the outbox is a killed write's orphan."""


class DirectoryPublisher(Publisher):
    """Writes ``<outbox id>-<created>.json`` atomically; a re-send rewrites the same file."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        # The folder as text, joined with "/": a burst writes thousands of files, and
        # pathlib's objects cost more per file than the system calls (as in the inbox).
        self.folder = os.fspath(self.path)
        self.remove_orphans()

    def remove_orphans(self, now: float | None = None) -> list[str]:
        """Remove the temporary files of a writer killed mid-write (older than :data:`ORPHAN_AGE`:
        no write in progress); return their names. Their posts are written again."""
        now = time.time() if now is None else now
        removed = []
        with os.scandir(self.folder) as entries:
            for entry in entries:
                if not (entry.name.startswith(".") and entry.name.endswith(".tmp")):
                    continue
                try:
                    if now - entry.stat(follow_symlinks=False).st_mtime < ORPHAN_AGE:
                        continue
                    os.unlink(entry.path)
                except FileNotFoundError:  # renamed or removed meanwhile
                    continue
                removed.append(entry.name)
        if removed:
            log.info("outbox %s: %s unfinished temporary file(s) of a killed write removed",
                     self.folder, len(removed))
        return removed

    def filename(self, post: OutgoingPost) -> str:
        """Sortable by ``ls`` in publication order: the outbox id first, zero-padded."""
        created = post.created_at
        # The fields strftime("%Y%m%dT%H%M%S") wrote, at a fraction of its cost.
        return "%012d-%04d%02d%02dT%02d%02d%02d.json" % (
            post.id, created.year, created.month, created.day,
            created.hour, created.minute, created.second)

    def send(self, post: OutgoingPost) -> str:
        """Write the post's file (write to a temporary name, then rename)."""
        name = self.filename(post)
        fields = {"id": post.id, "key": post.key, "channel": post.channel, "recipient": post.recipient,
                  "game": post.game, "kind": post.kind, "subject": post.subject, "body": post.body,
                  "created_at": iso(post.created_at)}
        payload = (json.dumps(fields, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
        # A temporary name of its own (two daemons, or two threads of one, may write the
        # same post at once): each rename then puts one complete file in place. Not
        # mkstemp: the file keeps the permissions the umask gives, as the reader expects.
        temporary = f"{self.folder}/.{name}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            descriptor = os.open(temporary, _CREATE, 0o666)  # a burst writes thousands: no file object
            try:
                os.write(descriptor, payload)
            finally:
                os.close(descriptor)
            os.replace(temporary, f"{self.folder}/{name}")
        except OSError as exc:
            try:
                os.unlink(temporary)
            except FileNotFoundError:
                pass
            raise DeliveryFailed(f"cannot write {name}: {exc}") from exc
        return name
