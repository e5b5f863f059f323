"""Inbox adapters: where messages come from."""

from __future__ import annotations

import logging
from typing import Any

from dealer.extras import missing
from dealer.inbox.base import Inbox, InboxMessage, Unreadable


log = logging.getLogger(__name__)

AUTH_OFF_WARNING = (
    "DEALER_EMAIL_AUTH=off: a player's mail counts as from whatever its From: line says, so "
    "anyone who knows a player's address can play as them (forwarders' mails are still "
    "authenticated); keep it for a closed setup"
)
"""What the daemon logs at start, and ``dealer health`` says, when mail is not authenticated."""


def open_inbox(spec: str, max_bytes: int = 65536, settings: Any = None) -> Inbox:
    """The inbox a setting names: ``dir:PATH``, ``imap:HOST[:PORT]`` or ``memory``."""
    kind, _, arg = spec.partition(":")
    if kind == "imap":
        return _imap(arg, max_bytes, settings)
    if kind == "dir":
        from dealer.inbox.directory import DirectoryInbox

        return DirectoryInbox(arg or "./var/inbox", max_bytes=max_bytes)
    if kind == "memory":
        from dealer.inbox.memory import MemoryInbox

        return MemoryInbox()
    raise ValueError(f"unknown inbox {spec!r}; use dir:PATH or imap:HOST[:PORT]")


def _imap(where: str, max_bytes: int, settings: Any) -> Inbox:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        from dealer.inbox.imap import ImapInbox
        import imapclient  # noqa: F401
    except ImportError:
        raise missing("email", "an IMAP inbox") from None
    host, port = _host_port(where.removeprefix("//"), "imap")
    if settings is None or not settings.imap_user:
        raise ValueError("an IMAP inbox needs DEALER_IMAP_USER and DEALER_IMAP_PASSWORD")
    try:
        zone = ZoneInfo(settings.email_timezone or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"DEALER_EMAIL_TIMEZONE {settings.email_timezone!r} is not a known time zone") from None
    from dealer.inbox.mailauth import MailAuthenticator

    checking = settings.email_auth != "off"
    if not checking:
        log.warning(AUTH_OFF_WARNING)
    return ImapInbox(
        host, port, user=settings.imap_user, password=settings.imap_password,
        security=settings.imap_security, folder=settings.imap_folder or "INBOX",
        forwarders={a for a in settings.email_forwarders.split(",") if a.strip()},
        zone=zone, max_bytes=max(max_bytes, 1 << 20),
        auth=MailAuthenticator(settings.email_authserv_id), check_senders=checking,
    )


def _host_port(where: str, kind: str) -> tuple[str, int | None]:
    """``HOST`` or ``HOST:PORT`` of a ``kind:`` setting."""
    host, _, port = where.rstrip("/").partition(":")
    host = host.strip()
    if not host or (port and not port.isdigit()):
        raise ValueError(f"write the {kind} server as {kind}:HOST or {kind}:HOST:PORT, not {kind}:{where}")
    return host, int(port) if port else None


__all__ = ["Inbox", "InboxMessage", "Unreadable", "open_inbox"]
