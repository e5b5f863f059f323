"""Whatever one sender sends through any inbound source, that one message is set aside
with why and the others go on (issue 36, item 1): a mail's headers, a Discourse webhook or
catch-up page, a Discord gateway event or history page, a signed webhook.

The repro of the issue: a mail dated ``Fri, 31 Dec 9999 23:59:59 -0500`` (a moment past
the end of the calendar once in UTC) made every pass raise ``OverflowError`` for ever.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from dealer.inbox.base import InboxMessage, Unreadable
from dealer.inbox.discord import GatewayEvents, read_history, time_snowflake
from dealer.inbox.discourse import message_from_event, signature
from dealer.inbox.mail import read_mail
from dealer.routes import parse_routes
from dealer.settings import Settings
from dealer.shell.discourse import DiscourseHooks, catch_up
from dealer.shell.passes import Dealer
from dealer.store.models import Inbound

sys.path.insert(0, str(Path(__file__).parent))
from mailservers import Dovecot, dovecot  # noqa: E402,F401

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
EDGE = "Fri, 31 Dec 9999 23:59:59 -0500"
"""The issue's mail date: 9999-12-31 23:59 at -05:00 is 10000-01-01 04:59 in UTC."""
EDGE_ISO = "9999-12-31T23:59:59-05:00"
SECRET = "discourse-secret"


def mail(ident: str, date: str, body: str = "help") -> bytes:
    return (f"From: bob@example.org\r\nTo: dealer@dealer.example\r\nSubject: move\r\n"
            f"Message-ID: <{ident}>\r\nDate: {date}\r\n"
            "Content-Type: text/plain; charset=utf-8\r\n\r\n" + body).encode("utf-8")


# -- mail ---------------------------------------------------------------------------------


def test_a_mail_dated_past_the_calendar_is_unreadable_with_why() -> None:
    with pytest.raises(Unreadable, match="Date: .*9999.* outside the times dealer can keep"):
        read_mail(mail("edge@x", EDGE), T0)
    # A date that cannot be read at all still counts at the mail's arrival (docs/EMAIL.md).
    message, _ = read_mail(mail("garbled@x", "the day after tomorrow"), T0)
    assert message.sent_at == T0


def test_the_edge_mail_is_set_aside_and_the_ten_others_applied(dovecot: Dovecot, database_url: str,
                                                               tmp_path: Path) -> None:
    pytest.importorskip("imapclient")
    from dealer.inbox.imap import REJECTED, ImapInbox

    server = dovecot

    folder = server.new_folder()
    good = T0.strftime("%a, %d %b %Y %H:%M:%S +0000")
    for number in range(11):
        server.deliver(folder, mail(f"m{number}@example.org", EDGE if number == 5 else good))
    inbox = ImapInbox(server.host, server.port, user=server.user, password=server.password,
                      security="none", folder=folder)
    settings = Settings(home=str(tmp_path), database_url=database_url, _env_file=None)
    dealer = Dealer(settings, inbox=inbox)
    try:
        report = dealer.run_pass(T0 + timedelta(hours=1))
        assert (report.ingested, report.unreadable) == (10, 1)
        flags = server.flags(folder)
        assert flags[5] == (REJECTED.encode(), b"\\Seen")
        assert all(flag == (b"\\Seen",) for i, flag in enumerate(flags) if i != 5)
        with dealer.sessions() as session:
            rows = session.query(Inbound).all()
        # Each of the ten was applied: answered (bob is linked to no player), none pending.
        assert len(rows) == 10
        assert all(row.status != "pending" for row in rows)
        assert dealer.run_pass(T0 + timedelta(hours=2)).unreadable == 0  # set aside for good
    finally:
        inbox.close()
        dealer.engine.dispose()


# -- Discourse ----------------------------------------------------------------------------


TOPICS = {7: "#motions"}


def post(ident: Any, created: Any = "2026-12-01T10:00:00.000Z", **more: Any) -> dict[str, Any]:
    return {"id": ident, "username": "alice", "user_id": 3, "raw": f"motion {ident}", "topic_id": 7,
            "topic_archetype": "regular", "post_number": 2, "created_at": created, **more}


@pytest.mark.parametrize("payload", [
    {"post": post(11, EDGE_ISO)},
    {"post": post(float("inf"))},
    {"post": post(11, topic_id="seven")},
    {"post": post(11, topic_id=None)},
    {"post": post(11, raw={"a": 1}, id=[1])},
    {"post": "a post"},
    {"like": {"post": post(11), "user": {"username": "bob", "id": 1e300}}},
])
def test_a_discourse_payload_it_cannot_read_is_unreadable(payload: dict[str, Any]) -> None:
    event = "post_liked" if "like" in payload else "post_created"
    with pytest.raises(Unreadable):
        message_from_event(event, payload, TOPICS, "dealer", T0)


def test_a_discourse_delivery_it_cannot_read_is_refused_with_why_and_the_next_stored(database_url: str,
                                                                                   tmp_path: Path) -> None:
    settings = Settings(home=str(tmp_path), database_url=database_url, _env_file=None)
    dealer = Dealer(settings)
    hooks = DiscourseHooks(dealer.engine, SECRET, TOPICS, "dealer", clock=lambda: T0)

    def deliver(body: bytes) -> Any:
        return hooks.receive({"x-discourse-event-signature": signature(SECRET, body),
                              "x-discourse-event": "post_created"}, body)

    try:
        edge = deliver(json.dumps({"post": post(11, EDGE_ISO)}).encode())
        assert edge.status == 400 and "9999" in edge.payload["error"]
        nested = deliver(b"[" * 100_000)
        assert nested.status == 400
        good = deliver(json.dumps({"post": post(12)}).encode())
        assert (good.status, good.payload["stored"]) == (200, "new")
    finally:
        dealer.engine.dispose()


class LatestPosts:
    """The Discourse publisher's ``latest_posts`` (newest first), one page."""

    def __init__(self, page: list[Any]) -> None:
        self.page = page

    def latest_posts(self, before: int | None) -> list[Any]:
        return self.page if before is None else []


def test_the_discourse_catch_up_sets_aside_a_post_it_cannot_read(database_url: str, tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings(home=str(tmp_path), database_url=database_url, _env_file=None)
    dealer = Dealer(settings)
    page = [post(30), {"no": "id"}, post(float("inf")), post(28, EDGE_ISO), "junk", post(27)]
    try:
        with caplog.at_level(logging.WARNING):
            new = catch_up(dealer.engine, LatestPosts(page), TOPICS, "dealer", T0)  # type: ignore[arg-type]
        assert new == 2
        with dealer.sessions() as session:
            assert sorted(row.external_id for row in session.query(Inbound)) == ["post/27", "post/30"]
        assert "post 28 set aside" in caplog.text and "without a readable id" in caplog.text
    finally:
        dealer.engine.dispose()


# -- Discord ------------------------------------------------------------------------------


ROUTES = parse_routes("#motions=discord:channel/55", "dir:/nonexistent")


def history_entry(ident: Any, **more: Any) -> dict[str, Any]:
    return {"id": ident, "channel_id": "55", "guild_id": "9", "type": 0, "content": f"hello {ident}",
            "author": {"id": "77", "username": "alice"}, **more}


def test_discord_history_sets_aside_an_entry_it_cannot_read(caplog: pytest.LogCaptureFixture) -> None:
    first, last = time_snowflake(T0), time_snowflake(T0 + timedelta(minutes=5))
    history = [
        history_entry(str(first)),
        history_entry(str(first + 1), author=None),
        history_entry("not-a-snowflake"),
        history_entry(str(1 << 80)),  # a time past the calendar
        history_entry(str(first + 2), channel_id="fifty-five"),
        "junk",
        history_entry(str(last)),
    ]
    with caplog.at_level(logging.WARNING):
        found, cursor = read_history(history, ROUTES, bot_id=None, is_dm=False)
    assert [m.id for m in found] == [str(first), str(last)]
    assert cursor == str(last)
    assert caplog.text.count("set aside") == 5


def test_discord_gateway_events_it_cannot_read_are_set_aside(caplog: pytest.LogCaptureFixture) -> None:
    heard: list[InboxMessage] = []
    events = GatewayEvents(ROUTES, lambda messages, places: heard.extend(messages), lambda: None, lambda: T0)
    edit = SimpleNamespace(data={"author": {"id": "77"}, "content": "bet 5", "edited_timestamp": EDGE_ISO},
                           guild_id=9, channel_id=55, message_id=1234)
    no_author = SimpleNamespace(author=None, webhook_id=None, channel=SimpleNamespace(id=55), guild=None, id=5)
    odd_reaction = SimpleNamespace(user_id=77, channel_id=55, guild_id=9, message_id=5, emoji="👍",
                                   member=None)
    with caplog.at_level(logging.WARNING):
        assert events.on_edit(edit) == []
        assert events.on_message(no_author) == ([], {})
        assert events.on_delete(SimpleNamespace()) == []
    assert caplog.text.count("set aside") == 3
    # A good event still reads.
    [reaction] = events.on_reaction(odd_reaction, removed=False)
    assert (reaction.kind, reaction.target) == ("reaction", "5")
