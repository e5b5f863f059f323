"""The directory inbox (DESIGN.md): one JSON file per message.

A stored message's file moves to ``processed/``; an unreadable one to ``rejected/`` with a
``.why`` file beside it. Nothing is deleted.

Files are read in the order they arrived: by modification time (to the nanosecond the file
system keeps), then by name. The daemon stores them in that order, so the store's ingest
order (the row id) follows arrival and breaks ties between messages sent in the same
microsecond. File systems stamp files with a clock that may tick only every few
milliseconds, so two files written within one tick share a time: their names then decide,
and ``dealer submit`` names its files after the moment it writes them (to the nanosecond).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from dealer.inbox.base import Delivery, Inbox, InboxMessage, Unreadable


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
        """The message files waiting, in arrival order: modification time, then name.

        Hidden files (a writer's temporary ``.NAME.tmp``) and folders are not messages.
        """
        found: list[tuple[int, str, Path]] = []
        with os.scandir(self.path) as entries:
            for entry in entries:
                if entry.name.startswith(".") or not entry.name.endswith(".json"):
                    continue
                try:
                    if not entry.is_file():
                        continue
                    stamp = entry.stat().st_mtime_ns
                except FileNotFoundError:  # taken by another daemon meanwhile
                    continue
                found.append((stamp, entry.name, Path(entry.path)))
        found.sort()
        return [path for _, _, path in found]

    def fetch(self) -> Iterator[Delivery | tuple[Path, str]]:
        """Yield every message file in arrival order (see :meth:`waiting`)."""
        for file in self.waiting():
            try:
                size = file.stat().st_size
            except FileNotFoundError:  # taken by another daemon meanwhile
                continue
            if size > self.max_bytes:
                yield file, f"the file is {size} bytes; a message may be at most {self.max_bytes}"
                continue
            try:
                raw = file.read_bytes().decode("utf-8")
            except FileNotFoundError:
                continue
            except UnicodeDecodeError as exc:
                yield file, f"not UTF-8 text: {exc}"
                continue
            try:
                yield Delivery(file, raw, InboxMessage.from_json(raw))
            except Unreadable as exc:
                yield file, str(exc)

    def done(self, handle: Path) -> None:
        """Move the stored message's file to ``processed/``."""
        _move(handle, self.processed)

    def reject(self, handle: Path, why: str) -> None:
        """Move the file to ``rejected/`` and write the reason beside it."""
        target = _move(handle, self.rejected)
        if target is not None:
            target.with_name(target.name + ".why").write_text(why + "\n", encoding="utf-8")


def _move(file: Path, folder: Path) -> Path | None:
    target = folder / file.name
    counter = 1
    while target.exists():
        target = folder / f"{file.stem}.{counter}{file.suffix}"
        counter += 1
    try:
        file.replace(target)
    except FileNotFoundError:
        return None
    return target
