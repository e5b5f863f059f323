"""Reading an e-mail as an inbound message (pure): a player's own mail (``email:ADDRESS``, at
its ``Date:``) or a PM forwarded by a trusted forwarder (its ``From:`` line's name, at its
own date line); quoted history and signature stripped (docs/EMAIL.md)."""

from __future__ import annotations

import email
import email.policy
import hashlib
import html
import re
from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo
from email.message import EmailMessage
from email.utils import parseaddr, parsedate_to_datetime
from typing import Any

from dealer.inbox.base import InboxMessage, Unreadable


@dataclass(frozen=True)
class Mail:
    """What dealer reads of one e-mail."""

    message_id: str
    """The ``Message-ID`` without its angle brackets (a hash of the mail when it has none)."""
    address: str
    """The ``From:`` address, lower case."""
    subject: str
    date: datetime | None
    text: str
    """The plain-text body (an HTML-only mail's text with its tags taken out)."""
    references: tuple[str, ...] = ()


@dataclass(frozen=True)
class ForwardedPM:
    """A PM found inside a forwarded mail."""

    sender: str
    sent_at: datetime | None
    body: str


def parse_mail(raw: bytes) -> Mail:
    """Read the headers and plain text of a mail; raise :class:`Unreadable` saying why."""
    try:
        message = email.message_from_bytes(raw, policy=email.policy.default)
    except Exception as exc:  # the parser is lenient; anything it raises is the mail's fault
        raise Unreadable(f"not a readable e-mail: {type(exc).__name__}: {exc}") from None
    assert isinstance(message, EmailMessage)
    name, address = parseaddr(str(message.get("From", "")))
    if "@" not in address:
        raise Unreadable("the mail has no From: address")
    message_id = _angle(str(message.get("Message-ID", "")))
    if not message_id:
        # A mail without its own id still needs a stable one: the same mail read twice
        # must be the same message.
        message_id = "sha256-" + hashlib.sha256(raw).hexdigest()[:40]
    date = _mail_date(message)
    references = tuple(_angle(part) for part in str(message.get("References", "")).split() if _angle(part))
    return Mail(
        message_id=message_id[:200],
        address=address.strip().lower(),
        subject=str(message.get("Subject", "")).strip(),
        date=date,
        text=_plain_text(message),
        references=references,
    )


def _mail_date(message: EmailMessage) -> datetime | None:
    """The mail's ``Date:`` in UTC, None when unreadable (it counts when it arrived);
    :class:`Unreadable` for a date at the calendar's edge, which no store keeps."""
    if not message.get("Date"):
        return None
    value = str(message["Date"])
    try:
        date = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if date.tzinfo is None:
        date = date.replace(tzinfo=timezone.utc)
    try:
        return date.astimezone(timezone.utc)
    except (OverflowError, ValueError):
        raise Unreadable(f"its Date: {value[:60]!r} is outside the times dealer can keep") from None


def _angle(value: str) -> str:
    return value.strip().removeprefix("<").removesuffix(">").strip()


def _plain_text(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        content = part.get_content()
    except (LookupError, ValueError):  # an unknown charset: read what can be read
        payload = part.get_payload(decode=True) or b""
        content = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else str(payload)
    if part.get_content_subtype() == "html":
        content = _html_text(content)
    return content.replace("\r\n", "\n").replace("\r", "\n")


def _html_text(markup: str) -> str:
    markup = re.sub(r"(?is)<(script|style).*?</\1>", "", markup)
    markup = re.sub(r"(?i)<br\s*/?>|</p>|</div>", "\n", markup)
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


_FORWARD_MARK = re.compile(
    r"^\s*(?:-{2,}\s*(?:forwarded message|original message|forwarded message follows)\s*-{2,}"
    r"|begin forwarded message:)\s*$",
    re.IGNORECASE,
)
_HEADER = re.compile(r"^\s*\*?(from|date|sent|subject|to|cc)\*?\s*:\s*(.*)$", re.IGNORECASE)


def find_forwarded(text: str, zone: tzinfo = timezone.utc) -> ForwardedPM | None:
    """The PM forwarded in ``text``: header lines (``From:`` among them) after a forward marker
    or at the top, then its body; None when there is none."""
    lines = text.split("\n")
    starts = [i + 1 for i, line in enumerate(lines) if _FORWARD_MARK.match(line)]
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and _HEADER.match(lines[first]):
        starts.insert(0, first)
    for start in starts:
        found = _header_block(lines, start, zone)
        if found is not None:
            return found
    return None


def _header_block(lines: list[str], start: int, zone: tzinfo) -> ForwardedPM | None:
    headers: dict[str, str] = {}
    index = start
    while index < len(lines) and not lines[index].strip():
        index += 1
    while index < len(lines):
        match = _HEADER.match(lines[index])
        if not match:
            break
        headers.setdefault(match.group(1).lower(), match.group(2).strip())
        index += 1
    if "from" not in headers:
        return None
    sender = _display_name(headers["from"])
    if not sender:
        return None
    when = headers.get("date") or headers.get("sent")
    body = "\n".join(lines[index:])
    # Only the first forwarded PM is read: a forward of a forward quotes older ones below.
    nested = next((i for i, line in enumerate(lines[index:]) if _FORWARD_MARK.match(line)), None)
    if nested is not None:
        body = "\n".join(lines[index:index + nested])
    return ForwardedPM(sender=sender, sent_at=parse_date(when, zone) if when else None, body=strip_reply(body))


def _display_name(value: str) -> str:
    """A forum name from a ``From:`` value (``"Thunder Bob" <tb@x.org>`` gives ``Thunder Bob``)."""
    value = re.sub(r"\[mailto:[^\]]*\]", "", value).strip()
    if "<" in value:
        name = value[:value.index("<")].strip()
        value = name or value[value.index("<") + 1:].rstrip(">").strip()
    return value.strip().strip('"').strip("'").strip()


_DATE_FORMATS = (
    "%a, %b %d, %Y at %I:%M %p",  # Gmail: "Tue, Dec 1, 2026 at 10:00 AM"
    "%a, %b %d, %Y at %H:%M",
    "%a %b %d, %Y %I:%M %p",  # phpBB: "Tue Dec 01, 2026 10:00 am"
    "%a %b %d, %Y %H:%M",
    "%d %b %Y, %H:%M",  # "01 Dec 2026, 10:00"
    "%d %B %Y, %H:%M",
    "%A, %B %d, %Y %I:%M %p",  # Outlook: "Tuesday, December 1, 2026 10:00 AM"
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d %H:%M",
    "%m/%d/%Y %I:%M %p",
    "%d/%m/%Y %H:%M",
)


def parse_date(value: str, zone: tzinfo = timezone.utc) -> datetime | None:
    """A forwarded PM's date line as UTC (RFC 2822, ISO 8601, clients' forms; no zone: ``zone``), or None."""
    value = value.strip()
    candidates: list[datetime] = []
    try:
        candidates.append(parsedate_to_datetime(value))
    except (TypeError, ValueError, IndexError):
        pass
    try:
        candidates.append(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError:
        pass
    cleaned = re.sub(r"\s+", " ", value.replace("\u202f", " ")).strip()
    for form in _DATE_FORMATS:
        try:
            candidates.append(datetime.strptime(cleaned, form))
        except ValueError:
            continue
    for when in candidates:
        if when.tzinfo is None:
            when = when.replace(tzinfo=zone)
        try:
            return when.astimezone(timezone.utc)
        except (OverflowError, ValueError):
            continue
    return None


_WROTE = re.compile(r"^\s*(on\b.*\bwrote:|.*\bwrote:\s*$|-{2,}\s*original message\s*-{2,})", re.IGNORECASE)


def strip_reply(text: str) -> str:
    """``text`` without ``>`` lines and what follows ``On ... wrote:``, ``-----Original Message-----`` or ``-- ``."""
    kept: list[str] = []
    for line in text.split("\n"):
        if line.rstrip() in ("--", "-- ") or line == "-- " or _WROTE.match(line):
            break
        if line.lstrip().startswith(">"):
            continue
        kept.append(line.rstrip())
    return "\n".join(kept).strip("\n").strip()


def read_mail(raw: bytes, received: datetime, forwarders: frozenset[str] = frozenset(),
              zone: tzinfo = timezone.utc) -> tuple[InboxMessage, dict[str, Any]]:
    """The message a mail carries, with the mail's id, address and subject a reply needs;
    :class:`Unreadable` for a mail dealer cannot read."""
    mail = parse_mail(raw)
    forwarded = find_forwarded(mail.text, zone) if mail.address in forwarders else None
    if forwarded is not None:
        sender, sent_at, body = forwarded.sender, forwarded.sent_at, forwarded.body
    else:
        sender, sent_at, body = f"email:{mail.address}", None, strip_reply(mail.text)
    sent_at = sent_at or mail.date or received
    thread = {"message_id": mail.message_id, "address": mail.address, "subject": mail.subject,
              "references": list(mail.references), "forwarded": forwarded is not None}
    try:
        message = InboxMessage(id=mail.message_id, sender=sender[:200], channel="pm", body=body,
                               sent_at=sent_at)
    except Exception as exc:
        raise Unreadable(f"invalid message: {exc}") from None
    return message, thread
