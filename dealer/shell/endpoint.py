"""What runs beside ``dealer run``'s loop for the push platforms (issue 14): the HTTP
endpoint in a thread, the IMAP IDLE watch and Discourse's catch-up, each made only when its
settings ask; a missing extra or a bad setting is a ``ValueError`` naming it."""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable

from dealer.clock import utcnow
from dealer.extras import missing
from dealer.shell.admission import Admission, guarded_protocol

if TYPE_CHECKING:
    from dealer.shell.passes import Dealer

log = logging.getLogger(__name__)


def endpoint_routes(dealer: Dealer, clock: Callable[[], datetime] = utcnow) -> list[Any]:
    """The routes the settings ask for: ``POST /inbox`` and ``POST /discourse``, each with its secret."""
    settings = dealer.settings
    try:
        import starlette  # noqa: F401
    except ImportError:
        raise missing("webhook", "the webhook endpoint") from None
    from dealer.shell.webhooks import WebhookInbox, webhook_routes

    inbox = None
    if settings.webhook_secret:
        inbox = WebhookInbox(dealer.engine, settings.webhook_secret, clock=clock, wake=dealer.wake.set,
                             max_bytes=settings.max_message_bytes)
    extra: list[Any] = []
    if settings.discourse_webhook_secret:
        from dealer.inbox.discourse import parse_topics
        from dealer.shell.discourse import DiscourseHooks, discourse_routes

        hooks = DiscourseHooks(dealer.engine, settings.discourse_webhook_secret,
                               parse_topics(settings.discourse_topics), settings.discourse_username,
                               clock=clock, wake=dealer.wake.set)
        extra = discourse_routes(hooks)
    routes = webhook_routes(inbox, extra)
    if not routes:
        raise ValueError("DEALER_WEBHOOK_LISTEN is set but no route is on: set DEALER_WEBHOOK_SECRET "
                         "(POST /inbox) or DEALER_DISCOURSE_WEBHOOK_SECRET (POST /discourse)")
    return routes


KEEP_ALIVE = 5
"""Seconds an idle kept-alive connection stays open (uvicorn's ``timeout_keep_alive``)."""
HEAD_BYTES = 16384
"""The largest request head read (uvicorn's ``h11_max_incomplete_event_size``)."""


class Endpoint:
    """The webhook endpoint, served by uvicorn in its own thread, its connections kept by :class:`Admission`."""

    def __init__(self, app: Any, host: str, port: int, admission: Admission | None = None) -> None:
        import uvicorn

        self.admission = admission or Admission()
        self.server = uvicorn.Server(uvicorn.Config(
            app, host=host, port=port, log_level="warning", lifespan="off",
            # dealer's logging (with its limit on repeated lines) handles uvicorn's too.
            log_config=None, access_log=False,
            http=guarded_protocol(self.admission), timeout_keep_alive=KEEP_ALIVE,
            h11_max_incomplete_event_size=HEAD_BYTES,
            # A second fence: requests in flight beyond the connection cap are answered 503.
            limit_concurrency=self.admission.cap + 1, backlog=max(self.admission.cap, 64),
        ))
        # dealer run handles the signals; the server must not take them over.
        self.server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self.thread = threading.Thread(target=self.server.run, name="dealer-endpoint", daemon=True)
        self.where = f"http://{host}:{port}"

    def start(self) -> "Endpoint":
        self.thread.start()
        log.info("webhook endpoint on %s", self.where)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (or ``:PORT``, meaning 127.0.0.1) of ``DEALER_WEBHOOK_LISTEN``."""
    host, sep, port = value.strip().rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"DEALER_WEBHOOK_LISTEN: write HOST:PORT (like 127.0.0.1:8081), not {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


class MailWatch:
    """Waits for new mail with IMAP IDLE on a connection of its own and wakes the loop."""

    def __init__(self, inbox: Any, wake: threading.Event, interval: float) -> None:
        self.inbox = inbox
        self.wake = wake
        self.interval = max(interval, 1.0)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="dealer-imap-idle", daemon=True)

    def _watch(self) -> None:
        try:
            if not self.inbox.offers_idle():
                log.info("the IMAP server offers no IDLE: new mail is read every %g s", self.interval)
                return
            # Watching from now on: what came before is read by one pass.
            self.wake.set()
        except Exception as exc:
            log.warning("IMAP IDLE: %s; polling every %g s meanwhile", exc, self.interval)
        while not self.stopping.is_set():
            try:
                if self.inbox.wait(min(self.interval * 12, 600.0)):
                    self.wake.set()
                    self.stopping.wait(1.0)  # let the pass read it before asking again
            except Exception as exc:  # the loop polls meanwhile; try IDLE again later
                if self.stopping.is_set():
                    return
                log.warning("IMAP IDLE: %s; polling every %g s meanwhile", exc, self.interval)
                # A mail may have come while the connection was lost: one pass reads it.
                self.wake.set()
                self.stopping.wait(self.interval)

    def start(self) -> "MailWatch":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.inbox.close()


def start_side(dealer: Dealer) -> list[Any]:
    """Start what the settings ask to run beside the loop; each has ``stop()``."""
    settings = dealer.settings
    started: list[Any] = []
    if settings.webhook_listen.strip():
        host, port = parse_listen(settings.webhook_listen)
        from dealer.shell.webhooks import create_app

        admission = Admission(settings.webhook_max_connections, settings.webhook_head_timeout,
                              settings.webhook_connection_seconds)
        started.append(Endpoint(create_app(endpoint_routes(dealer)), host, port, admission).start())
    if settings.inbox.startswith("imap:"):
        from dealer.inbox import open_inbox

        started.append(MailWatch(open_inbox(settings.inbox, settings.max_message_bytes, settings),
                                 dealer.wake, settings.poll_interval).start())
    return started


def catch_up(dealer: Dealer, now: datetime | None = None) -> int:
    """Discourse's catch-up when dealer posts to Discourse and reads its webhooks."""
    from dealer.publish.discourse import DiscoursePublisher

    settings = dealer.settings
    if not (isinstance(dealer.publisher, DiscoursePublisher) and settings.discourse_webhook_secret):
        return 0
    from dealer.inbox.discourse import parse_topics
    from dealer.shell import discourse

    try:
        return discourse.catch_up(dealer.engine, dealer.publisher, parse_topics(settings.discourse_topics),
                                  settings.discourse_username, now or dealer.clock())
    except Exception:
        log.exception("Discourse catch-up failed; it runs again at the next start or --once")
        return 0
