"""A post sent in plain text (e-mail, stdout) carries no Markdown escapes, in its body or in
its subject: the stored subject is escaped like the body (it may quote a player's line)."""

from __future__ import annotations

from datetime import datetime, timezone

from dealer.publish.base import OutgoingPost, Publisher
from dealer.routes import Destination
from dealer.text import escape_post

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)


class Keeper(Publisher):
    def __init__(self) -> None:
        self.sent: list[OutgoingPost] = []

    def send(self, post: OutgoingPost) -> str:
        self.sent.append(post)
        return f"kept:{post.id}"


def test_a_plain_destination_gets_the_subject_and_body_without_escapes() -> None:
    subject = escape_post("Not applied: set price_chip 20")
    assert subject == "Not applied: set price\\_chip 20"  # as the outbox stores it
    post = OutgoingPost(1, "k", "#game-actions", None, "h1", "error", subject,
                        "> set price\\_chip 20\n**refused**", T0)
    keeper = Keeper()
    keeper.send_to(post, Destination("stdout", "", "plain"), "plain")
    (sent,) = keeper.sent
    assert sent.subject == "Not applied: set price_chip 20"
    assert sent.body == "> set price_chip 20\nrefused"


def test_a_markdown_destination_keeps_the_escapes() -> None:
    post = OutgoingPost(1, "k", "#game-actions", None, "h1", "error", "set price\\_chip",
                        "set price\\_chip", T0)
    keeper = Keeper()
    keeper.send_to(post, Destination("dir", "var/outbox", "markdown"), "markdown")
    assert keeper.sent[0].subject == "set price\\_chip" and keeper.sent[0].body == "set price\\_chip"


def test_a_mails_subject_is_plain_text() -> None:
    from dealer.publish.smtp import SmtpPublisher

    post = OutgoingPost(1, "k", "#game-actions", None, "h1", "error",
                        escape_post("Not applied: set price_chip 20"), "body", T0)
    mail = SmtpPublisher("127.0.0.1", 25, sender="dealer@example.org").compose(post, "list@example.org")
    assert mail["Subject"] == "Not applied: set price_chip 20"
