"""The directory publisher (DESIGN.md): one JSON file per post, named in publication order."""

from __future__ import annotations

import logging
import os
import threading
import time
from json.encoder import encode_basestring
from pathlib import Path

from dealer.clock import iso
from dealer.publish.base import DeliveryFailed, OutgoingPost, Publisher

log = logging.getLogger(__name__)

ORPHAN_AGE = 60.0
"""Seconds after which a temporary file in the outbox is a killed write's orphan."""
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


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
        payload = _file_bytes(post)
        # A temporary name of its own (two daemons, or two threads of one, may write the
        # same post at once): each rename then puts one complete file in place. Not
        # mkstemp: the file keeps the permissions the umask gives, as the reader expects.
        temporary = f"{self.folder}/.{name}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            _write(temporary, payload)
            os.replace(temporary, f"{self.folder}/{name}")
        except OSError as exc:
            try:
                os.unlink(temporary)
            except FileNotFoundError:
                pass
            raise DeliveryFailed(f"cannot write {name}: {exc}") from exc
        return name


def _file_bytes(post: OutgoingPost) -> bytes:
    """The post's file as ``json.dumps(..., ensure_ascii=False, indent=2)`` writes it, and a
    newline, built here: an indent makes ``json.dumps`` use its pure-Python encoder."""
    head = (
        f'{{\n  "id": {post.id},\n  "key": {encode_basestring(post.key)},\n'
        f'  "channel": {encode_basestring(post.channel)},\n  "recipient": {_text(post.recipient)},\n'
        f'  "game": {_text(post.game)},\n  "kind": {encode_basestring(post.kind)},\n'
        f'  "subject": {encode_basestring(post.subject)},\n  "body": '
    )
    tail = f',\n  "created_at": "{iso(post.created_at)}"\n}}\n'
    return b"".join((head.encode("utf-8"), _long_text(post.body), tail.encode("ascii")))


_OTHER_CONTROLS = bytes(0x0A if code < 0x20 else code for code in range(256))
"""Changes only the control characters but the newline: a text without one comes back as the very object."""


def _long_text(text: str) -> bytes:
    """``encode_basestring(text).encode("utf-8")`` in a fraction of its time for a long body:
    in UTF-8 the characters ``json`` escapes are single bytes no other character contains, so
    replacing the quote, backslash and newline suffices unless another control character is there."""
    data = text.encode("utf-8")
    if data.translate(_OTHER_CONTROLS) is not data:
        return encode_basestring(text).encode("utf-8")
    return b'"' + data.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n") + b'"'


def _text(value: str | None) -> str:
    return "null" if value is None else encode_basestring(value)


def _write(path: str, payload: bytes) -> None:
    """Create ``path`` holding ``payload`` with one unbuffered write."""
    descriptor = os.open(path, _CREATE, 0o666)
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(descriptor, view):]
    finally:
        os.close(descriptor)
