"""Publisher adapters: where posts go."""

from __future__ import annotations

from typing import Any

from dealer.extras import missing
from dealer.publish.base import DeliveryFailed, Publisher


def open_publisher(spec: str, settings: Any = None) -> Publisher:
    """The publisher a setting names: ``dir:PATH``, ``stdout``, ``email[:LIST_ADDRESS]``, ``discourse`` or ``memory``."""
    kind, _, arg = spec.partition(":")
    if kind == "email":
        return _email(arg, settings)
    if kind == "discourse":
        return _discourse(settings)
    if kind == "dir":
        from dealer.publish.directory import DirectoryPublisher

        return DirectoryPublisher(arg or "./var/outbox")
    if kind == "stdout":
        from dealer.publish.stdout import StdoutPublisher

        return StdoutPublisher()
    if kind == "memory":
        from dealer.publish.memory import MemoryPublisher

        return MemoryPublisher()
    if kind == "discord":
        # Discord needs a channel per game channel, which one publisher spec cannot say.
        raise ValueError(
            "Discord is reached through DEALER_ROUTES, not DEALER_PUBLISH: "
            "DEALER_ROUTES='*=discord:channel/CHANNEL_ID;pm=discord:dm' with DEALER_DISCORD_TOKEN "
            "(docs/ROUTES.md, docs/DISCORD.md)"
        )
    raise ValueError(f"unknown publisher {spec!r}; use dir:PATH, stdout, email or discourse "
                     "(Discord: DEALER_ROUTES)")


def _email(list_address: str, settings: Any) -> Publisher:
    from dealer.publish.smtp import SmtpPublisher

    server = (settings.smtp_server if settings is not None else "").strip()
    host, _, port = server.partition(":")
    if not host.strip() or (port and not port.isdigit()):
        raise ValueError(f"mailing posts needs DEALER_SMTP_SERVER as HOST or HOST:PORT, not {server!r}")
    if not settings.email_from:
        raise ValueError("mailing posts needs dealer's own address: DEALER_EMAIL_FROM")
    return SmtpPublisher(
        host.strip(), int(port) if port else None, sender=settings.email_from,
        security=settings.smtp_security, user=settings.smtp_user, password=settings.smtp_password,
        list_address=list_address.strip() or settings.email_list or None,
    )


def _discourse(settings: Any) -> Publisher:
    try:
        import httpx  # noqa: F401
    except ImportError:
        raise missing("discourse", "posting to Discourse") from None
    from dealer.inbox.discourse import parse_topics
    from dealer.publish.discourse import DiscoursePublisher

    if settings is None or not (settings.discourse_url and settings.discourse_api_key and settings.discourse_username):
        raise ValueError("posting to Discourse needs DEALER_DISCOURSE_URL, DEALER_DISCOURSE_API_KEY "
                         "and DEALER_DISCOURSE_USERNAME")
    topics = {channel: topic for topic, channel in parse_topics(settings.discourse_topics).items()}
    return DiscoursePublisher(settings.discourse_url, settings.discourse_api_key, settings.discourse_username,
                              topics=topics)
