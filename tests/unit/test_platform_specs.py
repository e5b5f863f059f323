"""The e-mail and Discourse adapters named by DEALER_INBOX and DEALER_PUBLISH."""

from __future__ import annotations

from pathlib import Path

import pytest

from dealer.inbox import open_inbox
from dealer.inbox.imap import ImapInbox
from dealer.publish import open_publisher
from dealer.publish.discourse import DiscoursePublisher
from dealer.publish.smtp import SmtpPublisher
from dealer.settings import Settings


def settings(tmp_path: Path, **values: str) -> Settings:
    return Settings(home=str(tmp_path), _env_file=None, **values)


def test_an_imap_inbox_from_the_settings(tmp_path: Path) -> None:
    s = settings(tmp_path, imap_user="dealer", imap_password="pw", email_forwarders="Host@Forum.example, x@y.example",
                 email_timezone="Europe/Paris")
    inbox = open_inbox("imap:mail.example.org", settings=s)
    assert isinstance(inbox, ImapInbox)
    assert (inbox.host, inbox.port, inbox.security, inbox.folder) == ("mail.example.org", 993, "tls", "INBOX")
    assert inbox.forwarders == frozenset({"host@forum.example", "x@y.example"})
    assert open_inbox("imap:mail.example.org:1143", settings=s).port == 1143  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="DEALER_IMAP_USER"):
        open_inbox("imap:mail.example.org", settings=settings(tmp_path))
    with pytest.raises(ValueError, match="imap:HOST:PORT"):
        open_inbox("imap:mail.example.org:x", settings=s)
    with pytest.raises(ValueError, match="not a known time zone"):
        open_inbox("imap:mail.example.org", settings=settings(tmp_path, imap_user="u", email_timezone="Mars/Base"))


def test_an_smtp_publisher_from_the_settings(tmp_path: Path) -> None:
    s = settings(tmp_path, email_from="dealer@dealer.example", email_list="list@lists.example", smtp_user="u",
                 smtp_server="smtp.example.org")
    publisher = open_publisher("email", s)
    assert isinstance(publisher, SmtpPublisher)
    assert (publisher.host, publisher.port, publisher.security, publisher.list_address) == (
        "smtp.example.org", 587, "starttls", "list@lists.example")
    assert open_publisher("email:other@lists.example", s).list_address == "other@lists.example"  # type: ignore[attr-defined]
    port = settings(tmp_path, email_from="d@d.example", smtp_server="smtp.example.org:2525")
    assert open_publisher("email", port).port == 2525  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="DEALER_SMTP_SERVER"):
        open_publisher("email", settings(tmp_path, email_from="d@d.example"))
    with pytest.raises(ValueError, match="DEALER_EMAIL_FROM"):
        open_publisher("email", settings(tmp_path, smtp_server="smtp.example.org"))


def test_a_discourse_publisher_from_the_settings(tmp_path: Path) -> None:
    s = settings(tmp_path, discourse_url="https://forum.example", discourse_api_key="k",
                 discourse_username="dealer_bot", discourse_topics="#proposals=12; #the-raceway=34")
    publisher = open_publisher("discourse", s)
    assert isinstance(publisher, DiscoursePublisher)
    assert dict(publisher.topics) == {"#proposals": 12, "#the-raceway": 34}
    publisher.close()
    with pytest.raises(ValueError, match="DEALER_DISCOURSE_URL"):
        open_publisher("discourse", settings(tmp_path))
    with pytest.raises(ValueError, match="CHANNEL=TOPIC_ID"):
        open_publisher("discourse", settings(tmp_path, discourse_url="https://f.example", discourse_api_key="k",
                                             discourse_username="b", discourse_topics="#proposals"))
