"""The routing publisher: each post to its channel's transport, in that destination's format
(``DEALER_ROUTES``), one publisher per transport made when first needed."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from dealer.publish.base import DeliveryFailed, OutgoingPost, Publisher
from dealer.routes import Destination, RouteTable


class RoutingPublisher(Publisher):
    """Sends each post through the publisher of its route's transport."""

    def __init__(self, table: RouteTable, make: Callable[[Destination], Publisher]):
        self.table = table
        self.make = make
        self.transports: dict[str, Publisher] = {}

    def for_each_transport(self, prepare: Callable[[Publisher], None]) -> None:
        """Run ``prepare`` on every transport made from now on (the shell's store reads)."""
        make = self.make

        def made(destination: Destination) -> Publisher:
            transport = make(destination)
            prepare(transport)
            return transport

        self.make = made

    def transport(self, destination: Destination) -> Publisher:
        """The publisher serving ``destination`` (made once per transport)."""
        key = destination.transport
        if key not in self.transports:
            self.transports[key] = self.make(destination)
        return self.transports[key]

    def destination(self, post: OutgoingPost) -> Destination:
        """Where ``post`` goes (:meth:`dealer.routes.RouteTable.for_post`)."""
        accounts = post.accounts.get(post.recipient or "", {})
        return self.table.for_post(post.channel, post.recipient, accounts)

    def dedupes(self, post: OutgoingPost, destination: object = None) -> bool:
        """Whether the transport of ``post``'s route drops a repeat of it."""
        where = self.destination(post)
        try:
            return self.transport(where).dedupes(post, where)
        except (ImportError, ValueError, OSError):
            return True  # no transport: nothing is sent (send says why)

    def send(self, post: OutgoingPost) -> str:
        """Send ``post`` to its route's transport in that destination's format."""
        destination = self.destination(post)
        try:
            publisher = self.transport(destination)
        except (ImportError, ValueError, OSError) as exc:
            raise DeliveryFailed(f"cannot open {destination.spec}: {exc}") from exc
        return publisher.send_to(post, destination, destination.format)


def make_transport(
    destination: Destination, *, base: Path, discord: Callable[[], Publisher] | None = None,
    email: Callable[[], Publisher] | None = None, discourse: Callable[[], Publisher] | None = None,
) -> Publisher:
    """The publisher of one destination's transport; a ``dir:`` path relative to ``base``."""
    if destination.kind == "dir":
        from dealer.publish.directory import DirectoryPublisher

        path = Path(destination.arg).expanduser()
        return DirectoryPublisher(path if path.is_absolute() else base / path)
    if destination.kind == "stdout":
        from dealer.publish.stdout import StdoutPublisher

        return StdoutPublisher()
    if destination.kind == "memory":
        from dealer.publish.memory import MemoryPublisher

        return MemoryPublisher()
    if destination.kind == "discord":
        if discord is None:
            raise ValueError("no Discord publisher is configured (DEALER_DISCORD_TOKEN)")
        return discord()
    if destination.kind == "email":
        if email is None:
            raise ValueError("no SMTP publisher is configured (DEALER_SMTP_SERVER, DEALER_EMAIL_FROM)")
        return email()
    if destination.kind == "discourse":
        if discourse is None:
            raise ValueError("no Discourse publisher is configured (DEALER_DISCOURSE_URL)")
        return discourse()
    raise ValueError(f"no transport for {destination.spec}")
