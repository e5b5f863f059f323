"""The routing publisher: each post to its channel's transport, in that destination's format
(``DEALER_ROUTES``), one publisher per transport made when first needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from dealer.publish import open_publisher
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


def make_transport(destination: Destination, settings: Any, discord: Callable[[], Publisher]) -> Publisher:
    """The publisher of one destination's transport (:func:`dealer.publish.open_publisher`'s,
    a ``dir:`` path taken from the settings' base folder)."""
    if destination.kind == "discord":
        return discord()
    if destination.kind == "dir":
        path = Path(destination.arg).expanduser()
        return open_publisher(f"dir:{path if path.is_absolute() else settings.base / path}")
    return open_publisher(destination.kind, settings)
