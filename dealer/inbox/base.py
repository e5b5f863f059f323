"""The inbox port: an adapter yields raw messages and is told when each one is stored."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterator, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from dealer.clock import as_utc, parse_time

SENT_AT_FORM = 'write sent_at as an ISO-8601 time with its offset, like "2026-12-01T10:00:00Z"'
"""What an unreadable ``sent_at`` is told (a number is refused: seconds or milliseconds?)."""


class Unreadable(Exception):
    """A message that cannot be understood at all (bad JSON, missing fields)."""


class Incomplete(Unreadable):
    """Text that is not (yet) complete JSON, as a file still being written reads."""


class InboxMessage(BaseModel):
    """One message as DESIGN.md's directory inbox defines it."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)

    id: str = Field(min_length=1, max_length=200)
    sender: str = Field(min_length=1, max_length=200)
    channel: str = Field(default="pm", min_length=1, max_length=120)
    body: str = ""
    sent_at: datetime
    game: str | None = Field(default=None, max_length=64)
    kind: Literal["message", "edit", "delete", "reaction"] = "message"
    target: str | None = Field(default=None, max_length=200)
    emoji: str | None = Field(default=None, max_length=64)
    removed: bool = False
    """For a reaction: true when the reaction is taken back."""
    sender_name: str | None = Field(default=None, max_length=200)
    """The display name a platform showed; a message is attributed by ``sender``, never by it."""

    @field_validator("sent_at", mode="before")
    @classmethod
    def _utc(cls, value: Any) -> Any:
        # Only an ISO-8601 time is accepted: a number could be seconds or milliseconds
        # since 1970, and a guess would put the move at the wrong time.
        try:
            if isinstance(value, datetime):
                return as_utc(value)
            if isinstance(value, str):
                return parse_time(value)
        except OverflowError:  # the very edge of the calendar, e.g. year 9999 at -05:00
            raise ValueError(f"{_shown(value)} is outside the times dealer can keep; {SENT_AT_FORM}") from None
        except ValueError:
            pass
        raise ValueError(f"{SENT_AT_FORM}, not {_shown(value)}")

    @field_validator("id", "sender", "channel", "body", "game", "target", "emoji", "sender_name", mode="before")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        # No store keeps NUL in text (Postgres refuses it); the raw JSON keeps it escaped.
        return value.replace("\x00", "") if isinstance(value, str) else value

    @field_validator("target", mode="before")
    @classmethod
    def _post_id(cls, value: Any) -> Any:
        # DESIGN: a reaction may target one of dealer's posts by the outbox post's id, which
        # the directory outbox writes as a JSON number; a whole number is that id as text.
        # (bool is a subclass of int, and no id.)
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return value

    @field_validator("id", "sender", "channel")
    @classmethod
    def _no_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()

    @model_validator(mode="after")
    def _target_of_event(self) -> "InboxMessage":
        # An edit, a deletion or a reaction names the message it is about; a reaction its
        # emoji. Without them it could reach no game.
        if self.kind != "message" and not (self.target or "").strip():
            article = "an" if self.kind == "edit" else "a"
            raise ValueError(f"{article} {self.kind} needs \"target\": the id of the message it is about")
        if self.kind == "reaction" and not (self.emoji or "").strip():
            raise ValueError("a reaction needs \"emoji\"")
        if self.removed and self.kind != "reaction":
            raise ValueError("only a reaction can be \"removed\"")
        return self

    @classmethod
    def from_json(cls, text: str) -> "InboxMessage":
        """Parse a message; whatever the text holds, only :class:`Unreadable` comes out (deep nesting too)."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            # Any cut-short JSON text fails somewhere; only a whole value with more after
            # it ("Extra data") cannot be the start of a message still being written.
            kind = Unreadable if exc.msg == "Extra data" else Incomplete
            raise kind(f"not valid JSON: {exc}") from None
        except RecursionError:
            raise Unreadable("not readable: its JSON is nested too deeply") from None
        except Exception as exc:  # any other failure of the parser is the file's, not dealer's
            raise Unreadable(f"not readable: {type(exc).__name__}: {exc}") from None
        if not isinstance(data, dict):
            raise Unreadable("a message must be a JSON object")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'message'}: {err['msg']}"
                for err in exc.errors()
            )
            raise Unreadable(f"invalid message: {problems}") from None
        except RecursionError:
            raise Unreadable("not readable: a field is nested too deeply") from None
        except Exception as exc:
            raise Unreadable(f"invalid message: {type(exc).__name__}: {exc}") from None


def _shown(value: Any) -> str:
    """A field's value as an error quotes it (cut short)."""
    text = json.dumps(value) if isinstance(value, (int, float, bool, type(None))) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class SenderCheck:
    """What a transport that cannot vouch for its senders (e-mail) found: whether the sender is
    authenticated, how, and the pass phrase carried (in memory only)."""

    authenticated: bool
    how: str
    passphrase: str | None = None


@dataclass
class Delivery:
    """A message read from an inbox, with the raw text and the handle to acknowledge it."""

    handle: Any
    raw: str
    message: InboxMessage
    check: SenderCheck | None = None
    """None: the transport vouches for the sender (a platform account, the host's directory)."""


class Inbox(ABC):
    """Where messages come from. Adapters implement :meth:`fetch` and :meth:`done`."""

    source: str = "inbox"

    @abstractmethod
    def fetch(self, now: datetime | None = None) -> Iterator[Delivery | tuple[Any, str]]:
        """Yield each waiting message, or ``(handle, why)`` for an unreadable one, until :meth:`done`
        is called for it; one message never stops the fetch."""

    @abstractmethod
    def done(self, handle: Any) -> None:
        """The message is safely stored: it need not be yielded again."""

    @abstractmethod
    def reject(self, handle: Any, why: str) -> None:
        """The message could not be read; keep it aside with the reason."""
