"""The SMTP publisher: each post one plain-text mail (smtplib), its ``Message-ID`` from the
post's key; public posts to the list, a reply threaded to the mail it answers, another PM
to the player's address (:mod:`dealer.shell.mailing`). A temporary refusal or a missing
address raises :class:`DeliveryFailed`: never lost."""

from __future__ import annotations

import hashlib
import smtplib
import ssl
from dataclasses import dataclass, field, replace
from email.message import EmailMessage
from email.utils import format_datetime
from typing import Any, Callable

from dealer.formats import WORD_JOINER, render_for, to_plain
from dealer.publish.base import DeliveryFailed, OutgoingPost, Publisher


@dataclass(frozen=True)
class Addressing:
    """Where one post's mail goes, and the mail it answers."""

    to: str
    in_reply_to: str | None = None
    """The ``Message-ID`` (without brackets) of the mail this post replies to."""
    references: tuple[str, ...] = ()
    subject: str | None = None
    """A subject to use instead of the post's (``Re: ...`` of the mail replied to)."""
    on_behalf_of: str | None = None
    """The player a forwarding dealer passes the mail on to (named in the subject)."""


def message_id(key: str, domain: str) -> str:
    """The ``Message-ID`` of the post with ``key``: the same post, the same id."""
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
    return f"<dealer.{digest}@{domain}>"


def simple_addressing(list_address: str | None) -> Callable[[OutgoingPost], Addressing | None]:
    """Addressing without a store: public posts to ``list_address``, ``email:ADDRESS`` there; no other."""
    def address(post: OutgoingPost) -> Addressing | None:
        if post.recipient is None:
            return Addressing(list_address) if list_address else None
        if post.recipient.startswith("email:"):
            return Addressing(post.recipient.removeprefix("email:"))
        return None

    return address


@dataclass
class SmtpPublisher(Publisher):
    """Sends each post as one mail; ``security`` is ``starttls``, ``tls`` or ``none`` (a local relay)."""

    drops_repeats = False  # a mail sent twice arrives twice (its Message-ID only lets a client tell)

    host: str
    port: int | None = None
    sender: str = "dealer@localhost"
    security: str = "starttls"
    user: str = ""
    password: str = ""
    list_address: str | None = None
    timeout: float = 30.0
    ssl_context: Any = None
    addressing: Callable[[OutgoingPost], Addressing | None] | None = None
    sent: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.security not in ("tls", "starttls", "none"):
            raise ValueError(f"SMTP security must be starttls, tls or none, not {self.security!r}")
        if "@" not in self.sender:
            raise ValueError(f"the sender {self.sender!r} is not an e-mail address (DEALER_EMAIL_FROM)")
        self.port = self.port or {"tls": 465, "starttls": 587, "none": 25}[self.security]

    @property
    def domain(self) -> str:
        """The domain of dealer's own address (its ``Message-ID``s are in it)."""
        return self.sender.rpartition("@")[2].strip(">") or "localhost"

    def address(self, post: OutgoingPost) -> Addressing:
        """Where ``post`` goes; :class:`DeliveryFailed` when nowhere is known."""
        found = (self.addressing or simple_addressing(self.list_address))(post)
        if found is None:
            if post.recipient is None:
                raise DeliveryFailed(f"no list address for public posts in {post.channel} (DEALER_EMAIL_LIST)")
            raise DeliveryFailed(
                f"no e-mail address for {post.recipient}: link one "
                f"(dealer player link {post.recipient} email:ADDRESS) or let a mail of theirs arrive first"
            )
        return found

    format = "plain"
    """Mails are plain text: dealer's markup dropped, player text shown as written."""

    def compose(self, post: OutgoingPost, list_address: str | None = None) -> EmailMessage:
        """The mail of ``post``: plain text, its subject, threaded when it is a reply."""
        where = Addressing(list_address) if list_address and post.recipient is None else self.address(post)
        mail = EmailMessage()
        mail["From"] = self.sender
        mail["To"] = where.to
        # The stored subject is escaped like the body (it may quote a player's line): a
        # mail's subject is plain text, so the escapes go.
        subject = where.subject or to_plain(post.subject or "") or post.kind.replace("_", " ")
        if where.on_behalf_of:
            subject = f"[for {where.on_behalf_of}] {subject}"
        mail["Subject"] = " ".join(subject.split())[:250]
        mail["Date"] = format_datetime(post.created_at)
        mail["Message-ID"] = message_id(post.key, self.domain)
        if where.in_reply_to:
            mail["In-Reply-To"] = f"<{where.in_reply_to}>"
            chain = [*where.references, where.in_reply_to]
            mail["References"] = " ".join(f"<{ref}>" for ref in dict.fromkeys(chain))
        mail["X-Dealer-Post"] = post.key
        mail["X-Dealer-Kind"] = post.kind
        if post.game:
            mail["X-Dealer-Game"] = post.game
        mail["Auto-Submitted"] = "auto-generated"
        # A mail mentions nobody: the word joiner escape_post puts after every "@" only
        # breaks what its reader copies (an address, `dealer player link NAME email:ADDRESS`).
        body = post.body.replace("@" + WORD_JOINER, "@")
        mail.set_content(body.rstrip("\n") + "\n", subtype="plain", charset="utf-8")
        return mail

    def send(self, post: OutgoingPost) -> str:
        """Send ``post``'s mail, its body in plain text; return its ``Message-ID``."""
        return self._send(replace(post, body=render_for(self.format, post.body)))

    def send_to(self, post: OutgoingPost, destination: object, fmt: str) -> str:
        """A routed post: ``email:LIST_ADDRESS`` sends a public post to that address."""
        arg = str(getattr(destination, "arg", "") or "")
        return self._send(replace(post, body=render_for(fmt, post.body)), arg if "@" in arg else None)

    def _send(self, post: OutgoingPost, list_address: str | None = None) -> str:
        mail = self.compose(post, list_address)
        try:
            with self._open() as server:
                refused = server.send_message(mail)
        except smtplib.SMTPResponseException as exc:
            # 4xx: try again later; 5xx: the server will not take it as it is, but the
            # post is kept and retried until parked, where the host sees why.
            raise DeliveryFailed(f"the SMTP server answered {exc.smtp_code}: {_said(exc.smtp_error)}") from exc
        except smtplib.SMTPRecipientsRefused as exc:
            raise DeliveryFailed(f"the SMTP server refused {', '.join(exc.recipients)}") from exc
        except (smtplib.SMTPException, OSError) as exc:
            raise DeliveryFailed(f"SMTP {self.host}:{self.port}: {type(exc).__name__}: {exc}") from exc
        if refused:
            raise DeliveryFailed(f"the SMTP server refused {', '.join(refused)}")
        self.sent += 1
        return str(mail["Message-ID"])

    def _open(self) -> smtplib.SMTP:
        context = self.ssl_context or ssl.create_default_context()
        if self.security == "tls":
            server: smtplib.SMTP = smtplib.SMTP_SSL(self.host, self.port, timeout=self.timeout, context=context)
        else:
            server = smtplib.SMTP(self.host, self.port, timeout=self.timeout)
        try:
            server.ehlo()
            if self.security == "starttls":
                server.starttls(context=context)
                server.ehlo()
            if self.user:
                server.login(self.user, self.password)
        except Exception:
            server.close()
            raise
        return server


def _said(error: bytes | str) -> str:
    return error.decode("utf-8", "replace") if isinstance(error, bytes) else str(error)
