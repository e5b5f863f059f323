"""The directory publisher (DESIGN.md): one JSON file per post, named in publication order."""

from __future__ import annotations

import os
import threading
from json.encoder import encode_basestring
from pathlib import Path

from dealer.clock import iso
from dealer.publish.base import DeliveryFailed, OutgoingPost, Publisher

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


class DirectoryPublisher(Publisher):
    """Writes ``<outbox id>-<created>.json`` atomically; a re-send rewrites the same file."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        # The folder as text, joined with "/": a burst writes thousands of files, and
        # pathlib's objects cost more per file than the system calls (as in the inbox).
        self.folder = os.fspath(self.path)

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
        payload = _file_text(post).encode("utf-8")
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


def _file_text(post: OutgoingPost) -> str:
    """The post's file: its fields as ``json.dumps(..., ensure_ascii=False, indent=2)``
    writes them, character for character, and a newline. Built here because an indent
    makes ``json.dumps`` use its pure-Python encoder (twice the cost); each string is
    encoded by the C function that encoder uses."""
    return (
        f'{{\n  "id": {post.id},\n  "key": {encode_basestring(post.key)},\n'
        f'  "channel": {encode_basestring(post.channel)},\n  "recipient": {_text(post.recipient)},\n'
        f'  "game": {_text(post.game)},\n  "kind": {encode_basestring(post.kind)},\n'
        f'  "subject": {encode_basestring(post.subject)},\n  "body": {encode_basestring(post.body)},\n'
        f'  "created_at": "{iso(post.created_at)}"\n}}\n'
    )


def _text(value: str | None) -> str:
    return "null" if value is None else encode_basestring(value)


def _write(path: str, payload: bytes) -> None:
    """Create ``path`` (mode 0666 less the umask) holding ``payload``: an unbuffered write
    on the descriptor, which a file object's buffer would only copy first."""
    descriptor = os.open(path, _CREATE, 0o666)
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(descriptor, view):]
    finally:
        os.close(descriptor)
