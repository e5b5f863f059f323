"""The directory inbox (DESIGN.md): one JSON file per message.

A stored message's file moves to ``processed/``; an unreadable one to ``rejected/`` with a
``.why`` file beside it. Nothing is deleted.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from dealer.inbox.base import Delivery, Inbox, InboxMessage, Unreadable


class DirectoryInbox(Inbox):
    """Reads ``*.json`` files from a folder, oldest name first."""

    source = "dir"

    def __init__(self, path: str | os.PathLike[str], max_bytes: int = 65536):
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.processed = self.path / "processed"
        self.rejected = self.path / "rejected"
        for folder in (self.path, self.processed, self.rejected):
            folder.mkdir(parents=True, exist_ok=True)

    def fetch(self) -> Iterator[Delivery | tuple[Path, str]]:
        """Yield every message file in name order (files still being written are skipped)."""
        for file in sorted(self.path.glob("*.json")):
            if not file.is_file():
                continue
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
