"""The IMAP inbox: each unseen mail in a folder becomes an inbound message (dealer-moderator[email]).

A mail is read without marking it and flagged ``\\Seen`` only once its message is stored,
so a crash in between reads it again as a duplicate; an unreadable one is flagged
``$DealerRejected``, never deleted. A pass phrase line is cut out before the message is
made, never stored. A forwarder's mails are checked even with ``DEALER_EMAIL_AUTH=off``:
a forwarder speaks for every player.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone, tzinfo
from typing import Any, Iterator

from dealer.clock import iso_exact, utcnow
from dealer.inbox.base import Delivery, Inbox, InboxMessage, SenderCheck, Unreadable
from dealer.inbox.mail import read_mail
from dealer.inbox.mailauth import MailAuthenticator
from dealer.passphrases import take_passphrase

log = logging.getLogger(__name__)

REJECTED = "$DealerRejected"
"""The keyword a mail dealer could not read is flagged with."""
FETCH_BATCH = 50


class ImapInbox(Inbox):
    """An IMAP folder as an inbox; ``security`` is ``tls``, ``starttls`` or ``none`` (local tests only)."""

    source = "email"

    def __init__(self, host: str, port: int | None = None, *, user: str, password: str,
                 security: str = "tls", folder: str = "INBOX",
                 forwarders: frozenset[str] | set[str] = frozenset(), zone: tzinfo = timezone.utc,
                 max_bytes: int = 65536 * 4, timeout: float = 30.0, ssl_context: Any = None,
                 auth: MailAuthenticator | None = None, check_senders: bool = True) -> None:
        if security not in ("tls", "starttls", "none"):
            raise ValueError(f"IMAP security must be tls, starttls or none, not {security!r}")
        self.host = host
        self.port = port or (993 if security == "tls" else 143)
        self.user = user
        self.password = password
        self.security = security
        self.folder = folder
        self.forwarders = frozenset(address.strip().lower() for address in forwarders if address.strip())
        self.zone = zone
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.ssl_context = ssl_context
        self.auth = auth or MailAuthenticator()
        """Who checks each mail's sender."""
        self.check_senders = check_senders
        """False (``DEALER_EMAIL_AUTH=off``): only forwarders' mails are checked."""
        self._client: Any = None
        self.failures = 0
        """Passes that could not read the folder (the server unreachable, a bad login)."""

    def _connect(self) -> Any:
        if self._client is not None:
            return self._client
        from imapclient import IMAPClient

        client = IMAPClient(self.host, self.port, ssl=self.security == "tls",
                            ssl_context=self.ssl_context, timeout=self.timeout)
        try:
            if self.security == "starttls":
                client.starttls(self.ssl_context)
            client.login(self.user, self.password)
            client.select_folder(self.folder)
        except Exception:
            _quietly(client.logout)
            raise
        self._client = client
        return client

    def close(self) -> None:
        """Log out (the next fetch connects again)."""
        client, self._client = self._client, None
        if client is not None:
            _quietly(client.logout)

    def _call(self, work: Any) -> Any:
        """``work(client)``; a broken connection is dropped, so the next call connects anew."""
        try:
            return work(self._connect())
        except Exception:
            self.close()
            raise

    def fetch(self, now: datetime | None = None) -> Iterator[Delivery | tuple[Any, str]]:
        """Yield each unseen mail's message (the mail stays unseen until :meth:`done`)."""
        received = now or utcnow()
        def unseen(client: Any) -> list[int]:
            # NOOP first: a connection kept open sees mails that arrived since only once the
            # server has told it of them.
            client.noop()
            return list(client.search(["UNSEEN", "NOT", "KEYWORD", REJECTED]))

        was_open = self._client is not None
        try:
            uids = self._call(unseen)
        except Exception as exc:
            try:
                if not was_open:
                    raise
                uids = self._call(unseen)  # a connection the server closed meanwhile: once more
            except Exception:
                # The mails stay on the server, unseen: a later pass reads them. Nothing is lost.
                self._unreachable(exc)
                return
        for start in range(0, len(uids), FETCH_BATCH):
            chunk = uids[start:start + FETCH_BATCH]
            try:
                fetched = self._call(lambda c: c.fetch(chunk, ["RFC822.SIZE", "BODY.PEEK[]"]))
            except Exception as exc:
                self._unreachable(exc)
                return
            for uid in chunk:
                data = fetched.get(uid)
                if data is None:  # expunged meanwhile
                    continue
                raw = data.get(b"BODY[]") or b""
                if data.get(b"RFC822.SIZE", len(raw)) > self.max_bytes:
                    yield uid, f"the mail is larger than {self.max_bytes} bytes"
                    continue
                try:
                    message, thread = read_mail(raw, received, self.forwarders, self.zone)
                    message, check = self._checked(raw, message, thread)
                    stored = {**json.loads(message.model_dump_json()), "sent_at": iso_exact(message.sent_at),
                              "email": thread}
                except Unreadable as exc:
                    yield uid, str(exc)
                    continue
                except Exception as exc:  # whatever one mail holds, the others are still read
                    log.exception("mail %s could not be read", uid)
                    yield uid, f"not a readable e-mail: {type(exc).__name__}: {exc}"
                    continue
                yield Delivery(uid, json.dumps(stored, ensure_ascii=False), message, check)

    def _checked(self, raw: bytes, message: InboxMessage,
                 thread: dict[str, Any]) -> tuple[InboxMessage, SenderCheck | None]:
        """The message without its pass phrase line (cut even with the check off), and its sender's check."""
        taken = take_passphrase(message.body)
        if taken.phrase is not None:
            message = message.model_copy(update={"body": taken.body})
        if not self.check_senders and thread["address"] not in self.forwarders:
            return message, None
        verdict = self.auth.check(raw, thread["address"])
        thread.update(authenticated=verdict.authenticated, auth=verdict.how)
        return message, SenderCheck(verdict.authenticated, verdict.how, taken.phrase)

    def _unreachable(self, exc: BaseException) -> None:
        self.failures += 1
        log.warning("IMAP %s:%s (%s) not read this pass: %s: %s; its mails stay unseen for the next",
                    self.host, self.port, self.folder, type(exc).__name__, exc)

    def done(self, handle: Any) -> None:
        """The mail's message is stored: flag it read."""
        self._call(lambda c: c.add_flags([handle], [b"\\Seen"]))

    def reject(self, handle: Any, why: str) -> None:
        """Flag an unreadable mail read and ``$DealerRejected``; log why."""
        log.warning("mail %s in %s set aside (%s): %s", handle, self.folder, REJECTED, why)
        self._call(lambda c: c.add_flags([handle], [b"\\Seen", REJECTED.encode()]))

    def offers_idle(self) -> bool:
        """Whether the server offers IMAP IDLE."""
        return bool(self._call(lambda c: b"IDLE" in c.capabilities()))

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` with IMAP IDLE; True when something changed, False at once without IDLE."""
        def idle(client: Any) -> bool:
            if b"IDLE" not in client.capabilities():
                return False
            # What arrived since the last command is told by the next one: ask first, so a
            # mail that came just before IDLE is not waited for until the timeout.
            _, before = client.noop()
            if any(_news(r) for r in before):
                return True
            client.idle()
            try:
                responses = client.idle_check(timeout=timeout)
            finally:
                client.idle_done()
            return any(_news(r) for r in responses)

        return bool(self._call(idle))


def _news(response: Any) -> bool:
    """An untagged response saying a mail arrived (``* 3 EXISTS``, ``* 1 RECENT``)."""
    return isinstance(response, tuple) and len(response) > 1 and response[1] in (b"EXISTS", b"RECENT")


def _quietly(action: Any) -> None:
    try:
        action()
    except Exception:
        pass
