"""A mail's body (dealer/publish/smtp.py): what its reader copies is exactly as written."""

from __future__ import annotations

from datetime import datetime, timezone

from dealer.formats import WORD_JOINER, render_for
from dealer.publish.base import OutgoingPost
from dealer.publish.smtp import SmtpPublisher
from dealer.render import render
from dealer.text import escape_post

NOW = datetime(2026, 12, 1, 18, 0, tzinfo=timezone.utc)
COMMAND = "dealer player link NAME email:bob@example.net"


def _mail_text(body: str) -> str:
    post = OutgoingPost(id=1, key="k1", channel="pm", recipient="email:bob@example.net", game=None,
                        kind="reply", subject="Re: move", body=body, created_at=NOW)
    publisher = SmtpPublisher("mail.example.org", sender="dealer@example.org", security="none")
    mail = publisher.compose(publisher_body(publisher, post))
    return mail.get_content()


def publisher_body(publisher: SmtpPublisher, post: OutgoingPost) -> OutgoingPost:
    """The post as :meth:`SmtpPublisher.send` hands it to ``compose``: in plain text."""
    from dataclasses import replace

    return replace(post, body=render_for(publisher.format, post.body))


def test_a_command_to_paste_has_no_invisible_character_in_a_mail() -> None:
    """Issue 34: the reply to an unknown sender told the host a command with a word joiner
    after the ``@``; pasted, it linked an address that never matched."""
    body = render("common/error.txt", NOW, what=f"Ask the host: `{COMMAND}`.", rule=None,
                  allowed=[], game_id=None)
    assert f"@{WORD_JOINER}" in body  # stored inert, as every post is
    text = _mail_text(body)
    assert f"`{COMMAND}`" in text
    assert WORD_JOINER not in text


def test_a_mail_shows_a_players_mention_as_typed() -> None:
    """A mail mentions nobody, so ``@everyone`` in a player's text is shown as typed."""
    text = _mail_text(f"Winner: {escape_post('@everyone')}")
    assert text == "Winner: @everyone\n"
