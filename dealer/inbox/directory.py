"""The directory inbox: one JSON file per message, moved to ``processed/`` once stored or to
``rejected/`` with a ``.why`` (README, "The inbox and the outbox").

Files are read by modification time, then name (``dealer submit`` names them to the
nanosecond), so the ingest order follows arrival within a clock tick. A file not yet
complete JSON and modified within :data:`WRITE_GRACE` is left for a later pass; a symbolic
link is refused, never followed (it could be quoted back to its sender).
"""

from __future__ import annotations

import logging
import os
import stat
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

from dealer.inbox.base import Delivery, Inbox, Incomplete, InboxMessage, Unreadable

log = logging.getLogger(__name__)

WRITE_GRACE = timedelta(seconds=5)
"""How long after its last change a file that is not complete JSON is waited for."""


class DirectoryInbox(Inbox):
    """Reads ``*.json`` files from a folder in arrival order (modification time, then name)."""

    source = "dir"

    def __init__(self, path: str | os.PathLike[str], max_bytes: int = 65536):
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.processed = self.path / "processed"
        self.rejected = self.path / "rejected"
        for folder in (self.path, self.processed, self.rejected):
            folder.mkdir(parents=True, exist_ok=True)

    def waiting(self) -> list[Path]:
        """The message files waiting, in arrival order; hidden files and folders are not messages."""
        found: list[tuple[int, str, Path]] = []
        with os.scandir(self.path) as entries:
            for entry in entries:
                if entry.name.startswith(".") or not entry.name.endswith(".json"):
                    continue
                try:
                    # A symbolic link is listed (and then refused), never followed.
                    if not entry.is_file(follow_symlinks=False) and not entry.is_symlink():
                        continue
                    stamp = entry.stat(follow_symlinks=False).st_mtime_ns
                except FileNotFoundError:  # taken by another daemon meanwhile
                    continue
                found.append((stamp, entry.name, Path(entry.path)))
        found.sort()
        return [path for _, _, path in found]

    def fetch(self, now: datetime | None = None) -> Iterator[Delivery | tuple[Path, str]]:
        """Yield every message file in arrival order, skipping one still being written at ``now``."""
        for file in self.waiting():
            try:
                item = self._read(file, now)
            except Exception as exc:  # whatever one file does, the others are still read
                log.exception("inbox file %s could not be read", file)
                item = (file, f"could not be read: {type(exc).__name__}: {exc}")
            if item is not None:
                yield item

    def _read(self, file: Path, now: datetime | None) -> Delivery | tuple[Path, str] | None:
        """The file's message, ``(file, why)`` if it cannot be read, None to leave it."""
        try:
            info = os.lstat(file)
        except FileNotFoundError:  # taken by another daemon meanwhile
            return None
        if stat.S_ISLNK(info.st_mode):
            return file, "a symbolic link is not read; write the message file itself into the inbox"
        try:
            data = _read_no_follow(file, self.max_bytes + 1)
        except FileNotFoundError:
            return None
        if len(data) > self.max_bytes:  # grown since it was listed, the size may be new
            size = info.st_size if info.st_size > self.max_bytes else f"over {self.max_bytes}"
            return file, f"the file is {size} bytes; a message may be at most {self.max_bytes}"
        try:
            raw = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            if self._still_written(info, now):
                return None  # a multi-byte character cut at the end of what is written so far
            return file, f"not UTF-8 text: {exc}"
        try:
            return Delivery(file, raw, InboxMessage.from_json(raw))
        except Incomplete as exc:
            if self._still_written(info, now):
                return None
            return file, str(exc)
        except Unreadable as exc:
            return file, str(exc)

    @staticmethod
    def _still_written(info: os.stat_result, now: datetime | None) -> bool:
        """Whether the file changed within :data:`WRITE_GRACE` of ``now``, either way (a clock behind)."""
        if now is None:
            return False
        changed = datetime.fromtimestamp(info.st_mtime_ns / 1e9, timezone.utc)
        return abs(now - changed) < WRITE_GRACE

    def done(self, handle: Path) -> None:
        """Move the stored message's file to ``processed/``."""
        _move(handle, self.processed)

    def reject(self, handle: Path, why: str) -> None:
        """Move the file to ``rejected/`` and write the reason beside it."""
        target = _move(handle, self.rejected)
        if target is not None:
            Path(target + ".why").write_text(why + "\n", encoding="utf-8")


def _read_no_follow(file: Path, limit: int) -> bytes:
    """At most ``limit`` bytes, refusing a link put in the file's place (never blocking on a FIFO)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    descriptor = os.open(file, flags)
    try:
        # os.read, not a file object around the descriptor: a message file is read in one
        # call, and a buffered reader costs more than the read (the inbox reads thousands).
        chunks = []
        while limit > 0:
            chunk = os.read(descriptor, limit)
            if not chunk:
                break
            chunks.append(chunk)
            limit -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def _move(file: Path, folder: Path) -> str | None:
    """Move ``file`` into ``folder`` under a free name; None if another daemon took it."""
    # os.path on strings, and the target returned as one (no Path for each message
    # stored): pathlib's joins, checks and objects cost more than the rename itself.
    target = os.path.join(folder, file.name)
    counter = 1
    while os.path.exists(target):
        target = os.path.join(folder, f"{file.stem}.{counter}{file.suffix}")
        counter += 1
    try:
        os.replace(file, target)
    except FileNotFoundError:
        return None
    return target
