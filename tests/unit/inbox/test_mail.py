"""Reading mails: a player's own mail, a forwarded PM, quoted history and signatures."""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings, strategies as st

from dealer.inbox.base import Unreadable
from dealer.inbox.mail import find_forwarded, parse_date, parse_mail, read_mail, strip_reply

RECEIVED = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
FORWARDER = "host@forum.example"


def mail(body: str, sender: str = "Alice <Alice@Example.org>", subject: str = "my move",
         message_id: str | None = "<m1@example.org>", date: str | None = "Tue, 01 Dec 2026 10:00:00 +0000",
         extra: str = "") -> bytes:
    head = [f"From: {sender}", "To: dealer@dealer.example", f"Subject: {subject}"]
    if message_id:
        head.append(f"Message-ID: {message_id}")
    if date:
        head.append(f"Date: {date}")
    head.append("Content-Type: text/plain; charset=utf-8")
    return ("\r\n".join(head) + extra + "\r\n\r\n" + body.replace("\n", "\r\n")).encode("utf-8")


def test_a_players_own_mail_is_from_their_address_at_its_date() -> None:
    message, thread = read_mail(mail("bet gold 30 silver 10\n"), RECEIVED)
    assert message.id == "m1@example.org"
    assert message.sender == "email:alice@example.org"
    assert message.channel == "pm"
    assert message.body == "bet gold 30 silver 10"
    assert message.sent_at == datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
    assert thread == {"message_id": "m1@example.org", "address": "alice@example.org",
                      "subject": "my move", "references": [], "forwarded": False}


def test_quoted_history_and_the_signature_are_stripped() -> None:
    body = ("prepare gold gold 30 silver 10\nthanks!\n\n-- \nAlice, sent from a phone\n")
    assert read_mail(mail(body), RECEIVED)[0].body == "prepare gold gold 30 silver 10\nthanks!"
    reply = ("bet black 40\n\nOn Tue, Dec 1, 2026 at 9:00 AM dealer <dealer@dealer.example> wrote:\n"
             "> Round 2 is open.\n> bet black 40\n")
    assert read_mail(mail(reply), RECEIVED)[0].body == "bet black 40"
    inline = "> accepted: bet gold 30\nbet gold 35\n> refused\n"
    assert strip_reply(inline) == "bet gold 35"
    outlook = "bet gold 5\n\n-----Original Message-----\nFrom: dealer\nbet gold 30\n"
    assert strip_reply(outlook) == "bet gold 5"


GMAIL_FORWARD = """FYI, from the forum.

---------- Forwarded message ---------
From: Thunder Bob <notifications@forum.example>
Date: Tue, Dec 1, 2026 at 9:41 AM
Subject: Stationary Roulette
To: Dealer

prepare black gold 35 silver 5

--
Classic Forum: you received this PM from Thunder Bob
"""


def test_a_forwarded_pm_is_from_its_from_line_at_its_own_date() -> None:
    message, thread = read_mail(mail(GMAIL_FORWARD, sender=f"The Host <{FORWARDER.upper()}>"), RECEIVED,
                                frozenset({FORWARDER}))
    assert message.sender == "Thunder Bob"
    assert message.body == "prepare black gold 35 silver 5"
    assert message.sent_at == datetime(2026, 12, 1, 9, 41, tzinfo=timezone.utc)
    assert thread["forwarded"] is True and thread["address"] == FORWARDER


def test_a_forward_from_an_untrusted_address_is_its_senders_own_mail() -> None:
    message, thread = read_mail(mail(GMAIL_FORWARD, sender="mallory@evil.example"), RECEIVED, frozenset({FORWARDER}))
    assert message.sender == "email:mallory@evil.example"
    assert thread["forwarded"] is False


def test_a_pasted_pm_and_a_date_in_the_forwarders_zone() -> None:
    pasted = "From: alice\nSent: Tue Dec 01, 2026 10:30 am\n\nbet gold 30 silver 10\n"
    message, _ = read_mail(mail(pasted, sender=FORWARDER), RECEIVED, frozenset({FORWARDER}),
                           ZoneInfo("Europe/Paris"))
    assert message.sender == "alice"
    assert message.sent_at == datetime(2026, 12, 1, 9, 30, tzinfo=timezone.utc)  # 10:30 in Paris


def test_a_forwarded_pm_without_a_date_line_counts_at_the_mails_date() -> None:
    text = "-------- Forwarded Message --------\nSubject: move\nFrom: bob\n\nbet gold 5\n"
    message, _ = read_mail(mail(text, sender=FORWARDER), RECEIVED, frozenset({FORWARDER}))
    assert (message.sender, message.body) == ("bob", "bet gold 5")
    assert message.sent_at == datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)


def test_a_forwarders_own_mail_without_a_pm_is_theirs() -> None:
    message, thread = read_mail(mail("help", sender=FORWARDER), RECEIVED, frozenset({FORWARDER}))
    assert message.sender == f"email:{FORWARDER}" and thread["forwarded"] is False


@pytest.mark.parametrize(("line", "expected"), [
    ("Tue, 01 Dec 2026 10:00:00 +0100", datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)),
    ("2026-12-01T10:00:00Z", datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)),
    ("Tue, Dec 1, 2026 at 10:05 PM", datetime(2026, 12, 1, 22, 5, tzinfo=timezone.utc)),
    ("Tuesday, December 1, 2026 10:00 AM", datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)),
    ("01 Dec 2026, 10:00", datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)),
    ("yesterday-ish", None),
])
def test_date_lines(line: str, expected: datetime | None) -> None:
    assert parse_date(line) == expected


def test_a_mail_without_a_message_id_gets_a_stable_one_and_no_date_counts_on_arrival() -> None:
    raw = mail("bet gold 1", message_id=None, date=None)
    first, _ = read_mail(raw, RECEIVED)
    assert first.id.startswith("sha256-") and read_mail(raw, RECEIVED)[0].id == first.id
    assert first.sent_at == RECEIVED


def test_an_html_only_mail_is_read_as_text() -> None:
    raw = (b"From: a@b.example\r\nMessage-ID: <h@b>\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
           b"<p>bet gold 30 &amp; more</p><script>x()</script>")
    assert read_mail(raw, RECEIVED)[0].body == "bet gold 30 & more"


def test_a_mail_without_a_from_address_is_unreadable() -> None:
    with pytest.raises(Unreadable, match="no From: address"):
        parse_mail(b"Subject: hi\r\n\r\nbet gold 1")


def test_references_are_kept_for_threading() -> None:
    parsed = parse_mail(mail("x", extra="\r\nReferences: <a@x> <b@y>"))
    assert parsed.references == ("a@x", "b@y")


@settings(deadline=None)  # under a loaded machine an example's time says nothing
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300))
def test_any_text_reads_without_crashing_and_keeps_no_quoted_line(text: str) -> None:
    stripped = strip_reply(text)
    assert all(not line.lstrip().startswith(">") for line in stripped.split("\n"))
    find_forwarded(text)  # never raises
