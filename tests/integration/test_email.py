"""E-mail in and out against real servers: dovecot (IMAP) and aiosmtpd (SMTP).

The IMAP inbox reads a folder of a throw-away dovecot account; the SMTP publisher sends to
an aiosmtpd server in the test process. Then a whole Stationary Roulette game is played
by e-mail: a forwarding dealer mails both players' PMs, dealer replies threaded to each
forwarded mail and mails the result posts to a list address. Every mail is signed with
DKIM by its From: domain (a test key; a DNS stub answers its selector, mailsign.py), as a
mail must be to count (tests/integration/test_mail_senders.py tests the forgeries).
"""

from __future__ import annotations

import sys
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

pytest.importorskip("imapclient")
pytest.importorskip("aiosmtpd")

sys.path.insert(0, str(Path(__file__).parent))
from mailservers import Dovecot, SmtpServer, dovecot, smtp_server, start_smtp  # noqa: E402,F401

pytest.importorskip("dkim")
from mailsign import DnsStub, sign  # noqa: E402

from dealer.inbox.imap import REJECTED, ImapInbox  # noqa: E402
from dealer.inbox.mailauth import CachedDns, MailAuthenticator  # noqa: E402
from dealer.publish.base import DeliveryFailed, OutgoingPost  # noqa: E402
from dealer.publish.smtp import Addressing, SmtpPublisher, message_id  # noqa: E402
from dealer.settings import Settings  # noqa: E402
from dealer.shell.admin import add_player, create_game  # noqa: E402
from dealer.shell.passes import Dealer  # noqa: E402

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
DAY = timedelta(days=1)
FORWARDER = "host@forum.example"
DEALER = "dealer@dealer.example"
LIST = "roulette-results@lists.example"


def text(mail) -> str:  # type: ignore[no-untyped-def]
    """A mail's text with its lines ended as dealer wrote them (SMTP sends CRLF)."""
    return str(mail.get_content()).replace("\r\n", "\n")


def post(ident: int = 1, recipient: str | None = "email:alice@example.org", key: str = "r1:1:reply",
         subject: str = "Round 1", body: str = "accepted: bet gold 30\n") -> OutgoingPost:
    return OutgoingPost(ident, key, "pm" if recipient else "#stationary-roulette", recipient, "r1",
                        "confirmation", subject, body, T0)


# -- SMTP out -----------------------------------------------------------------------------


def test_a_post_is_one_plain_text_mail_with_an_id_from_its_key(smtp_server: SmtpServer) -> None:
    publisher = SmtpPublisher(smtp_server.host, smtp_server.port, sender=DEALER, security="none")
    external = publisher.send(post(body="**bold** <b>x</b> @everyone\n"))
    [mail] = smtp_server.received.mails
    assert smtp_server.received.envelopes == [(DEALER, ["alice@example.org"])]
    assert mail["From"] == DEALER and mail["To"] == "alice@example.org"
    assert mail["Subject"] == "Round 1"
    assert mail.get_content_type() == "text/plain"
    # Plain text: dealer's own markup is dropped, the rest shown as written (no HTML).
    assert text(mail) == "bold <b>x</b> @everyone\n"
    assert external == mail["Message-ID"] == message_id("r1:1:reply", "dealer.example")
    # The same post sent again (a crash before it was marked delivered) is the same mail.
    assert publisher.send(post()) == external
    assert smtp_server.received.mails[1]["Message-ID"] == external
    # Another post, another id.
    assert publisher.send(post(2, key="r1:2:reply")) != external


def test_a_reply_is_threaded_and_a_public_post_goes_to_the_list(smtp_server: SmtpServer) -> None:
    def addressing(p: OutgoingPost) -> Addressing | None:
        if p.recipient is None:
            return Addressing(LIST)
        return Addressing(FORWARDER, in_reply_to="pm-7@forum.example", references=("a@x",),
                          subject="Re: Fwd: my move", on_behalf_of="alice")

    publisher = SmtpPublisher(smtp_server.host, smtp_server.port, sender=DEALER, security="none",
                              addressing=addressing)
    publisher.send(post(recipient="alice"))
    publisher.send(post(2, recipient=None, key="r1:round-1:result", subject="Round 1: results"))
    reply, result = smtp_server.received.mails
    assert reply["To"] == FORWARDER
    assert reply["Subject"] == "[for alice] Re: Fwd: my move"
    assert reply["In-Reply-To"] == "<pm-7@forum.example>"
    assert reply["References"] == "<a@x> <pm-7@forum.example>"
    assert result["To"] == LIST and result["Subject"] == "Round 1: results"
    assert result["In-Reply-To"] is None


def test_a_post_without_an_address_or_a_refusing_server_is_tried_again(smtp_server: SmtpServer) -> None:
    publisher = SmtpPublisher(smtp_server.host, smtp_server.port, sender=DEALER, security="none")
    with pytest.raises(DeliveryFailed, match="no e-mail address for alice"):
        publisher.send(post(recipient="alice"))
    with pytest.raises(DeliveryFailed, match="DEALER_EMAIL_LIST"):
        publisher.send(post(recipient=None))
    smtp_server.received.refuse_next = ["451 4.3.0 try again later"]
    with pytest.raises(DeliveryFailed, match="451"):
        publisher.send(post())
    assert smtp_server.received.mails == []
    publisher.send(post())
    assert len(smtp_server.received.mails) == 1
    closed = SmtpPublisher("127.0.0.1", 1, sender=DEALER, security="none", timeout=2)
    with pytest.raises(DeliveryFailed, match="SMTP 127.0.0.1:1"):
        closed.send(post())


@pytest.mark.parametrize("mode", ["starttls", "tls"])
def test_starttls_and_tls(mode: str, tmp_path: Path) -> None:
    controller, server = start_smtp(mode, tmp_path)
    try:
        publisher = SmtpPublisher(server.host, server.port, sender=DEALER, security=mode,
                                  ssl_context=server.tls_context)
        publisher.send(post())
        assert [m["To"] for m in server.received.mails] == ["alice@example.org"]
        # A client that does not trust the certificate sends nothing.
        untrusting = SmtpPublisher(server.host, server.port, sender=DEALER, security=mode)
        with pytest.raises(DeliveryFailed):
            untrusting.send(post(2, key="k2"))
        assert len(server.received.mails) == 1
    finally:
        controller.stop()


# -- IMAP in ------------------------------------------------------------------------------


DNS = DnsStub()
"""The DKIM keys of the senders' domains (one test key for all, each domain's own record)."""
for _domain in ("forum.example", "example.org", "b.example"):
    DNS.publish(_domain)


def mail(frm: str, body: str, ident: str, date: datetime, subject: str = "move", signed: bool = True) -> bytes:
    """A plain-text mail, signed with DKIM by its From: domain (unless not ``signed``)."""
    raw = (f"From: {frm}\r\nTo: {DEALER}\r\nSubject: {subject}\r\nMessage-ID: <{ident}>\r\n"
           f"Date: {date.strftime('%a, %d %b %Y %H:%M:%S +0000')}\r\n"
           "Content-Type: text/plain; charset=utf-8\r\n\r\n" + body.replace("\n", "\r\n")).encode("utf-8")
    return sign(raw, frm.rpartition("@")[2].rstrip(">")) if signed else raw


def forwarded(name: str, text: str, sent: datetime, ident: str) -> bytes:
    """A forum PM forwarded by the host's mail client (Gmail's form), a minute after."""
    body = ("---------- Forwarded message ---------\n"
            f"From: {name} <noreply@forum.example>\n"
            f"Date: {sent.strftime('%a, %b %-d, %Y at %-I:%M %p')}\n"
            "Subject: Stationary Roulette\nTo: Dealer\n\n"
            f"{text}\n\n-- \nClassic Forum PM notification\n")
    return mail(f"The Host <{FORWARDER}>", body, ident, sent + timedelta(minutes=1), "Fwd: Stationary Roulette")


def inbox_for(server: Dovecot, folder: str, authserv_id: str = "") -> ImapInbox:
    return ImapInbox(server.host, server.port, user=server.user, password=server.password,
                     security="none", folder=folder, forwarders={FORWARDER.upper()},
                     auth=MailAuthenticator(authserv_id, dns=CachedDns(DNS)))


def make_dealer(database_url: str, root: Path, inbox: ImapInbox, publisher: SmtpPublisher) -> Dealer:
    settings = Settings(home=str(root), database_url=database_url, _env_file=None)
    return Dealer(settings, inbox=inbox, publisher=publisher)


def test_mails_are_stored_once_and_flagged_read_only_after(dovecot: Dovecot, database_url: str, tmp_path: Path,
                                                          smtp_server: SmtpServer) -> None:
    folder = dovecot.new_folder()
    dovecot.deliver(folder, forwarded("alice", "bet gold 30", T0 + timedelta(minutes=5), "f1@host"))
    dovecot.deliver(folder, b"this is not a mail at all")
    dovecot.deliver(folder, mail("bob@example.org", "hello", "b1@example.org", T0))
    inbox = inbox_for(dovecot, folder)
    fetched = list(inbox.fetch(T0 + timedelta(hours=1)))
    # Reading does not mark anything read.
    assert dovecot.flags(folder) == [(), (), ()]
    alice, junk, bob = fetched
    assert (alice.message.sender, alice.message.body) == ("alice", "bet gold 30")
    assert alice.message.sent_at == T0 + timedelta(minutes=5)
    assert junk[1] == "the mail has no From: address"
    assert bob.message.sender == "email:bob@example.org"
    inbox.close()

    dealer = make_dealer(database_url, tmp_path, inbox, SmtpPublisher(
        smtp_server.host, smtp_server.port, sender=DEALER, security="none"))
    report = dealer.run_pass(T0 + timedelta(hours=1))
    assert (report.ingested, report.unreadable) == (2, 1)
    assert dovecot.flags(folder) == [(b"\\Seen",), (b"$DealerRejected", b"\\Seen"), (b"\\Seen",)]
    # bob's own mail: bob@example.org is linked to no player; the reply says so (once),
    # threaded to his mail.
    [told] = [m for m in smtp_server.received.mails if m["To"] == "bob@example.org"]
    assert told["In-Reply-To"] == "<b1@example.org>" and told["Subject"] == "Re: move"
    assert "Your email account is not linked to a player" in text(told)
    # Nothing unseen is left: the next pass reads nothing, and the same mail delivered
    # again (a forwarder sending it twice) is a duplicate.
    dovecot.deliver(folder, forwarded("alice", "bet gold 30", T0 + timedelta(minutes=5), "f1@host"))
    again = dealer.run_pass(T0 + timedelta(hours=2))
    assert (again.ingested, again.duplicates) == (0, 1)
    assert REJECTED == "$DealerRejected"
    inbox.close()
    dealer.engine.dispose()


def test_idle_wakes_on_a_new_mail(dovecot: Dovecot) -> None:
    folder = dovecot.new_folder()
    inbox = inbox_for(dovecot, folder)
    list(inbox.fetch(T0))  # connected, nothing there
    arrived = threading.Thread(target=dovecot.deliver, args=(folder, mail("a@b.example", "x", "i1@b", T0)))
    arrived.start()
    try:
        assert inbox.wait(10) is True
    finally:
        arrived.join()
    assert [d.message.id for d in inbox.fetch(T0)] == ["i1@b"]
    inbox.close()


# -- a whole game by e-mail ---------------------------------------------------------------


# The script and the figures of tests/integration/test_roulette_game.py (worked out by hand
# there from SR-8 to SR-11): alice 590, bob 600, chips 129 and 61.
ALICE = {p: "gold" if p <= 4 else "silver" if p <= 8 else "black" for p in range(10)}
BOB = {p: "gold" if p <= 4 else "silver" for p in range(10)}
LAYOUT = {"alice": {"gold": "gold 30 silver 10", "silver": "gold 30 silver 10", "black": "gold 35 silver 5"},
          "bob": {"gold": "gold 25 silver 15", "silver": "gold 25 silver 15"}}


def test_a_whole_stationary_roulette_game_by_email(dovecot: Dovecot, smtp_server: SmtpServer,
                                                   database_url: str, tmp_path: Path) -> None:
    folder = dovecot.new_folder()
    inbox = inbox_for(dovecot, folder)
    publisher = SmtpPublisher(smtp_server.host, smtp_server.port, sender=DEALER, security="none",
                              list_address=LIST)
    dealer = make_dealer(database_url, tmp_path, inbox, publisher)

    def setup(session) -> None:  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0, chips=100)
        add_player(session, "bob", T0, chips=100)
        create_game(session, "roulette", "r1", T0, players=["alice", "bob"], start=T0,
                    settings={"remind_before": ""})

    with dealer.sessions.begin() as session:
        setup(session)
    forwarded_ids: dict[str, str] = {}
    for phase in range(11):
        sent = T0 + phase * DAY + timedelta(hours=1)
        for name, colours, bet in (("alice", ALICE, "silver 40"), ("bob", BOB, "gold 40")):
            lines = []
            if phase >= 1:
                lines.append(f"bet {bet}")
            if phase <= 9:
                lines.append(f"prepare {colours[phase]} {LAYOUT[name][colours[phase]]}")
            ident = f"fwd-{name}-{phase}@host.example"
            forwarded_ids[ident] = name
            dovecot.deliver(folder, forwarded(name, "\n".join(lines), sent, ident))
        # The daemon reads the phase's mails only after its deadline: they count at the
        # PMs' own times.
        dealer.run_pass(T0 + (phase + 1) * DAY + timedelta(minutes=5))
    # A PM sent after the last deadline is too late.
    dovecot.deliver(folder, forwarded("bob", "bet gold 40", T0 + 11 * DAY + timedelta(minutes=1), "late@host.example"))
    dealer.run_pass(T0 + 11 * DAY + timedelta(minutes=10))

    from dealer.views import game_view, player_view
    with dealer.sessions.begin() as session:
        game = game_view(session, "r1")
        chips = {name: player_view(session, name)["chips"] for name in ("alice", "bob")}
    assert game["status"] == "finished"
    assert game["scores"] == {"alice": 590, "bob": 600}
    assert game["winner"] == "bob"
    assert chips == {"alice": 129, "bob": 61}

    mails = smtp_server.received.mails
    public = [m for m in mails if m["To"] == LIST]
    private = [m for m in mails if m["To"] == FORWARDER]
    assert len(public) + len(private) == len(mails)
    # Every forwarded PM got one reply, threaded to the forwarded mail and naming its player.
    replies = [m for m in private if m["In-Reply-To"]]
    assert len(replies) == 2 * 11 + 1
    for reply in replies:
        ident = reply["In-Reply-To"].strip("<>")
        name = "bob" if ident == "late@host.example" else forwarded_ids[ident]
        assert reply["Subject"] == f"[for {name}] Re: Fwd: Stationary Roulette"
        assert reply["References"] == f"<{ident}>"
    assert sum(text(m).count("\naccepted:\n") for m in replies) == 2 * (10 + 10)
    late = [m for m in replies if m["In-Reply-To"] == "<late@host.example>"]
    assert len(late) == 1 and "> bet gold 40" in text(late[0])
    # The result posts went to the list, in order: 10 rounds, then the final result.
    kinds = [m["X-Dealer-Kind"] for m in public]
    assert kinds.count("round_result") == 10
    assert kinds.count("phase_start") == 11  # the preparation phase and 10 rounds
    assert kinds[-1] == "final_result"
    assert all(not m["In-Reply-To"] for m in public)
    final = text(public[-1])
    assert "bob" in final and "1 chip" in final
    assert game["seeds"][0]["server_seed"] in final
    # Every mail was read and flagged only once stored; every post has its own Message-ID.
    assert all(flags == (b"\\Seen",) for flags in dovecot.flags(folder))
    assert len({m["Message-ID"] for m in mails}) == len(mails)
    inbox.close()
    dealer.engine.dispose()


def test_an_unreachable_imap_server_loses_nothing(dovecot: Dovecot, caplog: pytest.LogCaptureFixture) -> None:
    from mailservers import free_port

    down = ImapInbox("127.0.0.1", free_port(), user="u", password="p", security="none", timeout=2)
    assert list(down.fetch(T0)) == [] and down.failures == 1
    assert "not read this pass" in caplog.text
    wrong = ImapInbox(dovecot.host, dovecot.port, user=dovecot.user, password="wrong", security="none")
    assert list(wrong.fetch(T0)) == [] and wrong.failures == 1


def test_the_mail_watch_wakes_the_daemon(dovecot: Dovecot) -> None:
    from dealer.shell.endpoint import MailWatch

    folder = dovecot.new_folder()
    wake = threading.Event()
    watch = MailWatch(inbox_for(dovecot, folder), wake, interval=5).start()
    try:
        # Connected and watching: one wake for whatever came before.
        assert wake.wait(30)
        wake.clear()
        dovecot.deliver(folder, mail("a@b.example", "x", "w1@b", T0))
        assert wake.wait(30)
    finally:
        watch.stop()


def test_a_connection_the_server_closed_is_opened_again(dovecot: Dovecot) -> None:
    folder = dovecot.new_folder()
    inbox = inbox_for(dovecot, folder)
    assert list(inbox.fetch(T0)) == []
    inbox._client.shutdown()  # the server (or a NAT) dropped the idle connection  # type: ignore[union-attr]
    dovecot.deliver(folder, mail("a@b.example", "x", "c1@b", T0))
    assert [d.message.id for d in inbox.fetch(T0)] == ["c1@b"] and inbox.failures == 0
    inbox.close()


def test_routes_and_a_linked_address(dovecot: Dovecot, smtp_server: SmtpServer, database_url: str,
                                     tmp_path: Path) -> None:
    """With routes (pm=email, a channel to a list): a player's own mail from the address
    linked to them is theirs; the reply goes back threaded, in plain text; the game's
    public posts go to the channel's list address."""
    from dealer.shell.admin import link_account
    from dealer.shell.platforms import build_publisher

    folder = dovecot.new_folder()
    settings = Settings(home=str(tmp_path), database_url=database_url, _env_file=None,
                        routes="pm=email;#tally=email:tally@lists.example",
                        smtp_server=f"{smtp_server.host}:{smtp_server.port}", smtp_security="none",
                        email_from=DEALER)
    dealer = Dealer(settings, inbox=inbox_for(dovecot, folder), publisher=build_publisher(settings))
    with dealer.sessions.begin() as session:
        add_player(session, "alice", T0, chips=10)
        add_player(session, "bob", T0, chips=10)
        link_account(session, "alice", "email:Alice@Example.org", T0)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"])
    dovecot.deliver(folder, mail("Alice <alice@example.org>", "add 3 *now*\n\n-- \nAlice", "a1@example.org",
                                 T0 + timedelta(minutes=1)))
    report = dealer.run_pass(T0 + timedelta(minutes=2))
    assert report.ok and report.messages == 1
    mails = smtp_server.received.mails
    [reply] = [m for m in mails if m["To"] == "alice@example.org"]
    assert reply["In-Reply-To"] == "<a1@example.org>"
    assert "[for" not in reply["Subject"]
    assert "\\" not in text(reply)  # plain text: no markup escapes
    assert {m["To"] for m in mails} == {"alice@example.org", "tally@lists.example"}
    dealer.inbox.close()  # type: ignore[attr-defined]
    dealer.engine.dispose()
