"""Nobody plays as someone else by e-mail: senders authenticated, pass phrases, quarantine.

Mails go through a real dovecot folder into the daemon's pass and its replies out through
aiosmtpd (tests/integration/mailservers.py). Every mail is signed, or not, with a DKIM key
made for the test (mailsign.py), whose selector record a DNS stub answers.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("imapclient")
pytest.importorskip("aiosmtpd")
pytest.importorskip("dkim")

sys.path.insert(0, str(Path(__file__).parent))
from mailservers import Dovecot, SmtpServer, dovecot, smtp_server  # noqa: E402,F401
from mailsign import DnsStub, sign  # noqa: E402

from sqlalchemy import select  # noqa: E402

from dealer.inbox.imap import ImapInbox  # noqa: E402
from dealer.inbox.mailauth import CachedDns, MailAuthenticator  # noqa: E402
from dealer.metrics import METRICS  # noqa: E402
from dealer.passphrases import matches  # noqa: E402
from dealer.publish.smtp import SmtpPublisher  # noqa: E402
from dealer.settings import Settings  # noqa: E402
from dealer.shell.admin import add_player, create_game, link_account  # noqa: E402
from dealer.shell.passes import Dealer  # noqa: E402
from dealer.shell.senders import new_passphrase_for  # noqa: E402
from dealer.store.models import Event, Inbound, Passphrase, Post  # noqa: E402

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
FORWARDER = "host@forum.example"
DEALER = "dealer@dealer.example"
LIST = "tally@lists.example"
AUTHSERV = "mx.dealer.example"

DNS = DnsStub()
for _domain in ("forum.example", "example.org", "b.example", "evil.example"):
    DNS.publish(_domain)


def mail(frm: str, body: str, ident: str, at: datetime, *, signer: str | None = "from",
         headers: str = "", subject: str = "move") -> bytes:
    """A plain-text mail from ``frm``; signed by its From: domain (``signer="from"``), by
    another domain, or not at all (None). ``headers`` go on top, unsigned."""
    raw = (f"From: {frm}\r\nTo: {DEALER}\r\nSubject: {subject}\r\nMessage-ID: <{ident}>\r\n"
           f"Date: {at.strftime('%a, %d %b %Y %H:%M:%S +0000')}\r\n"
           "Content-Type: text/plain; charset=utf-8\r\n\r\n" + body.replace("\n", "\r\n")).encode("utf-8")
    if signer is not None:
        raw = sign(raw, frm.rpartition("@")[2].rstrip(">") if signer == "from" else signer)
    return headers.encode("utf-8") + raw


def forwarded(name: str, text: str, sent: datetime, ident: str, **options: Any) -> bytes:
    """A forum PM forwarded by the host (Gmail's form), a minute after it was sent."""
    body = ("---------- Forwarded message ---------\n"
            f"From: {name} <noreply@forum.example>\n"
            f"Date: {sent.strftime('%a, %b %-d, %Y at %-I:%M %p')}\n"
            "Subject: Tally\nTo: Dealer\n\n"
            f"{text}\n")
    return mail(f"The Host <{FORWARDER}>", body, ident, sent + timedelta(minutes=1), subject="Fwd: Tally",
                **options)


@pytest.fixture
def world(dovecot: Dovecot, smtp_server: SmtpServer, database_url: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A daemon reading a fresh folder (its mail server's authserv-id AUTHSERV), with alice
    (alice@example.org) and bob (bob@b.example, or forwarded PMs as ``bob``) in a tally
    that closes an hour after T0."""
    folder = dovecot.new_folder()
    inbox = ImapInbox(dovecot.host, dovecot.port, user=dovecot.user, password=dovecot.password,
                      security="none", folder=folder, forwarders={FORWARDER},
                      auth=MailAuthenticator(AUTHSERV, dns=CachedDns(DNS)))
    settings = Settings(home=str(tmp_path), database_url=database_url, _env_file=None)
    dealer = Dealer(settings, inbox=inbox, publisher=SmtpPublisher(
        smtp_server.host, smtp_server.port, sender=DEALER, security="none", list_address=LIST))
    with dealer.sessions.begin() as session:
        add_player(session, "alice", T0, chips=10)
        add_player(session, "bob", T0, chips=10)
        link_account(session, "alice", "email:alice@example.org", T0)
        link_account(session, "bob", "email:bob@b.example", T0)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"], start=T0)

    class World:
        def deliver(self, raw: bytes) -> None:
            dovecot.deliver(folder, raw)

        def run(self, at: datetime):  # type: ignore[no-untyped-def]
            return dealer.run_pass(at)

        def rows(self) -> dict[str, Inbound]:
            with dealer.sessions() as session:
                return {row.external_id: row for row in session.scalars(select(Inbound))}

        def replies(self) -> list[Any]:
            return [m for m in smtp_server.received.mails if m["To"] != LIST]

        def totals(self) -> dict[str, int] | None:
            with dealer.sessions() as session:
                for event in session.scalars(select(Event).where(Event.game_id == "t1")):
                    if event.type == "tally.closed":
                        return dict(event.data["totals"])
            return None

    yield World(), dealer, folder
    inbox.close()
    dealer.engine.dispose()
    dealer.reader.dispose()


def text(mail_: Any) -> str:
    return str(mail_.get_content()).replace("\r\n", "\n")


def test_forged_mails_are_quarantined_unapplied_and_unanswered(world: Any) -> None:
    w, _, _ = world
    at = T0 + timedelta(minutes=5)
    alice = "Alice <alice@example.org>"
    # Genuine: signed by example.org; and one the host's server vouched for (DMARC pass).
    w.deliver(mail(alice, "add 1", "good@example.org", at))
    w.deliver(mail(alice, "add 2", "vouched@example.org", at, signer=None,
                   headers=f"Authentication-Results: {AUTHSERV}; spf=pass smtp.mailfrom=example.org;"
                           " dmarc=pass (p=reject) header.from=example.org\r\n"))
    # Forgeries, each as alice.
    w.deliver(mail(alice, "add 10", "unsigned@evil.example", at, signer=None))
    w.deliver(mail(alice, "add 10", "other-domain@evil.example", at, signer="evil.example"))
    own = mail("Mallory <mallory@evil.example>", "add 10", "forged-from@evil.example", at)
    w.deliver(own.replace(b"From: Mallory <mallory@evil.example>", f"From: {alice}".encode()))
    w.deliver(mail(alice, "add 10", "stranger@evil.example", at, signer=None,
                   headers="Authentication-Results: mx.evil.example; dkim=pass header.d=example.org;"
                           " dmarc=pass header.from=example.org\r\n"))
    w.deliver(mail(alice, "add 10", "server-says-no@evil.example", at,
                   headers=f"Authentication-Results: {AUTHSERV}; dkim=pass header.d=evil.example;"
                           " dmarc=fail header.from=example.org\r\n"))
    w.deliver(mail(alice, "add 1", "altered@example.org", at).replace(b"add 1", b"add 9"))
    # A forwarder forged the same ways cannot act for anyone.
    w.deliver(forwarded("bob", "add 10", at, "fwd-unsigned@evil.example", signer=None))
    w.deliver(forwarded("alice", "add 10", at, "fwd-other@evil.example", signer="evil.example"))

    registry = METRICS.enable()
    before = registry.get_sample_value("dealer_messages_total", {"outcome": "quarantined"}) or 0
    report = w.run(T0 + timedelta(minutes=10))
    assert report.ok and report.ingested == 10
    assert registry.get_sample_value("dealer_messages_total", {"outcome": "quarantined"}) == before + 8
    rows = w.rows()
    assert {k for k, row in rows.items() if row.status == "applied"} == {"good@example.org", "vouched@example.org"}
    quarantined = {k: row.error for k, row in rows.items() if row.status == "quarantined"}
    assert set(quarantined) == set(rows) - {"good@example.org", "vouched@example.org"}
    assert "no DKIM signature" in quarantined["unsigned@evil.example"]
    assert "a valid signature of evil.example, another domain than example.org" in quarantined["other-domain@evil.example"]
    assert "signature of evil.example that does not verify" in quarantined["forged-from@evil.example"]
    assert "no DKIM signature" in quarantined["stranger@evil.example"]  # the stranger's header ignored
    assert f"({AUTHSERV}) did not authenticate example.org: dkim=pass, dmarc=fail" in quarantined["server-says-no@evil.example"]
    assert "the body was changed after it was signed" in quarantined["altered@example.org"]
    assert "no DKIM signature" in quarantined["fwd-unsigned@evil.example"]
    assert rows["fwd-unsigned@evil.example"].sender == "bob"  # read as bob's PM, but held
    # Only the two genuine mails were answered: nothing to a forged address, nothing to the
    # forwarder.
    replies = w.replies()
    assert sorted(m["In-Reply-To"] for m in replies) == ["<good@example.org>", "<vouched@example.org>"]
    assert all(m["To"] == "alice@example.org" for m in replies)
    # A forger reusing a genuine mail's id with another text: kept apart, quarantined, and
    # nobody told (a genuine conflicting duplicate's sender is).
    w.deliver(mail(alice, "add 10", "good@example.org", at, signer=None))
    again = w.run(T0 + timedelta(minutes=15))
    assert again.conflicts == 1
    assert w.rows()["good@example.org#2"].status == "quarantined" and len(w.replies()) == 2
    # None applied: the tally closes with alice's 1 + 2 and bob's nothing.
    w.run(T0 + timedelta(hours=2))
    assert w.totals() == {"alice": 3, "bob": 0}


def test_a_pass_phrase_lets_an_unauthenticated_mail_through_and_is_never_kept(world: Any) -> None:
    w, dealer, _ = world
    with dealer.sessions.begin() as session:
        _, phrase = new_passphrase_for(session, "alice", T0)
    at = T0 + timedelta(minutes=5)
    alice = "alice@example.org"
    w.deliver(mail(alice, f"passphrase {phrase.upper()}\nadd 2", "phrase-ok@example.org", at, signer=None))
    w.deliver(mail(alice, "passphrase not the right words\nadd 7", "phrase-bad@example.org", at, signer=None))
    # bob sets his own by an authenticated mail, then sends a forwarded PM with it from a
    # forwarder's mail that cannot be authenticated.
    bobs = "correct horse battery staple"
    w.deliver(mail("bob@b.example", f"set passphrase {bobs}", "bob-sets@b.example", at))
    w.run(T0 + timedelta(minutes=10))
    w.deliver(forwarded("bob", f"passphrase {bobs}\nadd 4", at + timedelta(minutes=6), "fwd-phrase@host", signer=None))
    w.deliver(forwarded("alice", f"passphrase {bobs}\nadd 8", at + timedelta(minutes=6), "fwd-wrong@host", signer=None))
    w.run(T0 + timedelta(minutes=20))

    rows = w.rows()
    status = {k: row.status for k, row in rows.items()}
    assert status == {"phrase-ok@example.org": "applied", "phrase-bad@example.org": "quarantined",
                      "bob-sets@b.example": "applied", "fwd-phrase@host": "applied",
                      "fwd-wrong@host": "quarantined"}
    assert "alice has another pass phrase" in rows["fwd-wrong@host"].error
    assert rows["phrase-ok@example.org"].body == "add 2"
    assert rows["bob-sets@b.example"].body == "set passphrase [hidden]"
    # Neither phrase is stored anywhere: not in a body, a raw text, a reply; only hashes.
    with dealer.sessions() as session:
        posts = list(session.scalars(select(Post)))
        hashes = {p.player: p.hash for p in session.scalars(select(Passphrase))}
    kept = [row.body + row.raw + (row.error or "") for row in rows.values()] + [p.body + p.subject for p in posts]
    for secret in (phrase, phrase.upper(), bobs, "not the right words"):
        assert not any(secret in text_ for text_ in kept), secret
    assert matches(bobs, hashes["bob"]) and matches(phrase, hashes["alice"]) and bobs not in hashes["bob"]
    [set_reply] = [m for m in w.replies() if m["In-Reply-To"] == "<bob-sets@b.example>"]
    assert "Your pass phrase is set" in text(set_reply) and bobs not in text(set_reply)
    # bob's PM counted, answered through the forwarder; the wrong phrase was not answered.
    assert {m["In-Reply-To"] for m in w.replies()} == {
        "<phrase-ok@example.org>", "<bob-sets@b.example>", "<fwd-phrase@host>"}
    w.run(T0 + timedelta(hours=2))
    assert w.totals() == {"alice": 2, "bob": 4}


def test_the_host_releases_a_quarantined_mail_and_it_counts_at_its_own_time(world: Any, cli: Any) -> None:
    w, _, _ = world
    w.deliver(mail("alice@example.org", "add 3", "late-release@example.org", T0 + timedelta(minutes=10), signer=None))
    w.run(T0 + timedelta(minutes=20))
    assert w.rows()["late-release@example.org"].status == "quarantined" and w.replies() == []

    listed = cli("inbox", "list", "--quarantined").output
    assert "quarantined" in listed and "late-release@example.org" in listed
    assert "why: sender not authenticated: the mail has no DKIM signature" in listed
    assert "dealer inbox release ID" in listed
    shown = json.loads(cli("inbox", "list", "--quarantined", "--json").output)
    assert [row["message_id"] for row in shown] == ["late-release@example.org"]
    health = cli("health", "--now", (T0 + timedelta(minutes=20)).isoformat())
    assert "healthy" in health.output
    assert "1 mail(s) quarantined" in health.output  # a warning: still healthy
    assert "there is no stored message 'nonesuch'" in cli("inbox", "release", "nonesuch", ok=False).output
    released = cli("inbox", "release", str(shown[0]["id"])).output
    assert "is released" in released
    assert "is pending, not quarantined" in cli("inbox", "release", str(shown[0]["id"]), ok=False).output

    # The next pass runs after the tally closed; the mail counts at 12:10, before the close.
    w.run(T0 + timedelta(hours=2))
    assert w.rows()["late-release@example.org"].status == "applied"
    assert w.totals() == {"alice": 3, "bob": 0}
    [reply] = w.replies()
    assert reply["In-Reply-To"] == "<late-release@example.org>"
    assert "no quarantined messages" in cli("inbox", "list", "--quarantined").output


def test_with_the_check_off_a_mail_counts_as_its_from_line_says(world: Any, dovecot: Dovecot, cli: Any,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    from click.testing import CliRunner

    from dealer.cli import main
    from dealer.inbox import open_inbox

    w, dealer, folder = world
    dealer.inbox.close()
    settings = Settings(_env_file=None, inbox=f"imap:{dovecot.host}:{dovecot.port}", imap_user=dovecot.user,
                        imap_password=dovecot.password, imap_security="none", imap_folder=folder,
                        email_auth="off", email_forwarders=FORWARDER)
    with caplog.at_level(logging.WARNING):
        dealer.inbox = open_inbox(settings.inbox, settings.max_message_bytes, settings)
    assert "DEALER_EMAIL_AUTH=off" in caplog.text
    assert dealer.inbox.check_senders is False
    dealer.inbox.auth = MailAuthenticator(dns=CachedDns(DNS))  # the stub, not the real DNS
    w.deliver(mail("alice@example.org", "passphrase whatever it is\nadd 5", "off@example.org",
                   T0 + timedelta(minutes=1), signer=None))
    # A forwarder's mail is authenticated all the same: a forged one is held.
    w.deliver(forwarded("bob", "add 6", T0 + timedelta(minutes=1), "off-forged@host", signer=None))
    w.deliver(forwarded("bob", "add 1", T0 + timedelta(minutes=1), "off-signed@host"))
    w.run(T0 + timedelta(minutes=2))
    rows = w.rows()
    row = rows["off@example.org"]
    assert (row.status, row.body) == ("applied", "add 5")  # the phrase line is cut all the same
    assert "whatever it is" not in row.raw
    assert rows["off-forged@host"].status == "quarantined" and rows["off-signed@host"].status == "applied"
    dealer.inbox.close()
    env = {**cli.env, "DEALER_INBOX": f"imap:{dovecot.host}", "DEALER_EMAIL_AUTH": "off"}
    result = CliRunner().invoke(main, ["health", "--now", (T0 + timedelta(minutes=2)).isoformat()], env=env)
    assert result.exit_code == 0 and "warning: DEALER_EMAIL_AUTH=off" in result.output


def test_the_host_prints_a_new_pass_phrase_kept_only_hashed(cli: Any, database_url: str) -> None:
    from dealer.store.db import make_engine

    cli("player", "add", "alice")
    first = cli("player", "passphrase", "alice").output.strip().rpartition(": ")[2]
    second = cli("player", "passphrase", "ALICE").output.strip().rpartition(": ")[2]
    assert first != second and len(first) == 24
    engine = make_engine(database_url)
    with engine.connect() as connection:
        [(stored,)] = connection.execute(select(Passphrase.hash)).all()
    engine.dispose()
    assert matches(second, stored) and not matches(first, stored) and second not in stored
    assert "there is no player 'nobody'" in cli("player", "passphrase", "nobody", ok=False).output
