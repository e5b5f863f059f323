"""Running dealer: the daemon (`run`), the status page (`serve`) and the demo."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import click

from dealer.cli.common import _database, _route_table, _setting_error, _settings, _store, _time
from dealer.clock import utcnow
from dealer.extras import missing
from dealer.settings import Settings


@click.command()
@click.option("--once", is_flag=True, help="One pass (ingest, fire due deadlines, deliver), then exit.")
@click.option("--now", "now_text", metavar="ISO-TIME", help="With --once: act as if the clock read this time.")
def run(once: bool, now_text: str | None) -> None:
    """Run the daemon (or one pass of it with --once)."""
    from dealer.render import use_bytecode_cache
    from dealer.shell.passes import Dealer
    from dealer.shell.pidfile import pid_file

    now = _time(now_text, "--now")
    if now and not once:
        raise click.UsageError("--now goes with --once")
    settings = _settings()
    use_bytecode_cache(Path(settings.home) / "cache" / "templates")  # a restart compiles no template
    inbox, publisher = _adapters(settings)
    with _database(settings):
        dealer = Dealer(settings, inbox=inbox, publisher=publisher, clock=(lambda: now) if now else utcnow)
        if once or dealer.engine.dialect.name == "sqlite":
            dealer.check()
        # A daemon started while its database server is down or failing over (a host's
        # reboot, a compose file starting both at once) waits for it, logging each attempt,
        # as it does when the connection is lost later (dealer.shell.timers.run_forever);
        # a one-shot command, or a SQLite file, has nothing to wait for and ends at once.
    link = _discord_link(settings, dealer)
    if once:
        from dealer.shell.timers import ONCE_ATTEMPTS, keep_trying
        from dealer.store.transient import StoreUnavailable

        from dealer.shell.endpoint import catch_up

        if link is not None:
            # What was said on Discord since the last run counts before this pass.
            link.catch_up()
            link.stop()
        catch_up(dealer)  # Discourse posts made since the last run, when it is set up
        try:
            report = keep_trying(dealer, dealer.run_pass, attempts=ONCE_ATTEMPTS)
        except StoreUnavailable as exc:
            raise click.ClickException(
                f"{exc}. Nothing was lost: what this pass had not committed stays pending "
                "for the next one."
            ) from None
        click.echo(report.line())
        for change in report.overrides:
            click.echo(f"override: {change}")
        if not report.ok:
            raise click.ClickException(_not_handled(report))
        _mention_failed(dealer)
    else:
        if settings.metrics_port:
            _serve_metrics(settings.metrics_port)
        if settings.web:
            _serve_web_beside(settings)
        from dealer.shell.endpoint import catch_up, start_side
        from dealer.shell.timers import run_forever

        try:
            side = start_side(dealer)  # the webhook endpoint, IMAP IDLE (when set up)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
        catch_up(dealer)
        try:
            with _database(settings), pid_file(settings.pid_file):
                if link is not None:
                    link.start()
                try:
                    run_forever(dealer)
                finally:
                    if link is not None:
                        link.stop()
        finally:
            for part in side:
                part.stop()


def _discord_link(settings: Settings, dealer: Any):  # type: ignore[no-untyped-def]
    """The Discord gateway link of ``dealer run`` when a route listens on Discord."""
    from dealer.routes import BadRoute
    from dealer.shell.platforms import discord_link

    try:
        return discord_link(settings, dealer.engine, dealer.wake, dealer.clock)
    except BadRoute as exc:
        raise _setting_error("routes", "", exc) from None
    except ImportError as exc:
        raise _setting_error("routes", str(missing("discord", "Discord routes")), exc) from None


def _serve_metrics(port: int) -> None:
    """Serve Prometheus metrics on ``port``; a missing extra or a busy port ends the command."""
    from dealer.metrics import serve

    try:
        serve(port)
    except ImportError as exc:
        raise _setting_error("metrics_port", "", exc) from None
    except OSError as exc:
        raise _setting_error("metrics_port", f"cannot serve metrics on port {port}", exc) from None
    logging.getLogger("dealer.metrics").info("Prometheus metrics on port %s (/metrics)", port)


def _web_module():  # type: ignore[no-untyped-def]
    """:mod:`dealer.web`, or a clean error naming the extra it needs."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise click.ClickException(
            str(missing("web", "the status page"))
        ) from None
    from dealer import web

    return web


def _serve_web_beside(settings: Settings) -> None:
    """DEALER_WEB: the status page in a thread of `dealer run`."""
    web = _web_module()
    # No schema check here: `dealer run` waits for a store that is down at start, and the
    # page answers 503 until the store does.
    web.serve_in_thread(_store(settings, check=False), settings.web_host, settings.web_port)


@click.command()
@click.option("--host", default=None, help="Address to bind (default DEALER_WEB_HOST, 127.0.0.1).")
@click.option("--port", type=int, default=None, help="Port (default DEALER_WEB_PORT, 8080).")
def serve(host: str | None, port: int | None) -> None:
    """Serve the read-only status page: /, /games/ID, /players/NAME and their JSON
    (/api/games/ID, /api/players/NAME). Needs dealer-moderator[web]."""
    web = _web_module()
    settings = _settings()
    sessions = _store(settings)
    host = host or settings.web_host
    port = port or settings.web_port
    click.echo(f"status page on http://{host}:{port}/ (Ctrl-C stops it)")
    web.server(sessions, host, port).run()


def _adapters(settings: Settings):  # type: ignore[no-untyped-def]
    """The inbox and the publisher the settings name; a bad one ends the command."""
    from dealer.inbox import open_inbox

    try:
        inbox = open_inbox(settings.inbox, settings.max_message_bytes, settings)
    except ValueError as exc:
        raise _setting_error("inbox", "", exc) from None
    except OSError as exc:
        raise _setting_error("inbox", f"cannot use {settings.inbox!r}", exc) from None
    from dealer.routes import BadRoute
    from dealer.shell.platforms import build_publisher

    try:
        publisher = build_publisher(settings)
        problems = _route_table(settings).problems(
            discord_token=bool(settings.discord_token), webhook_url=bool(settings.discord_webhook_url),
            smtp_server=bool(settings.smtp_server.strip()), discourse_url=bool(settings.discourse_url.strip()))
    except BadRoute as exc:
        raise _setting_error("routes", "", exc) from None
    except ImportError as exc:
        raise _setting_error("routes", str(missing("discord", "Discord routes")), exc) from None
    except ValueError as exc:  # a publisher that cannot be opened
        raise _setting_error("publish", "", exc) from None
    except OSError as exc:
        raise _setting_error("publish", f"cannot use {settings.publish!r}", exc) from None
    if settings.routes.strip() and problems:
        raise click.ClickException("DEALER_ROUTES cannot work: " + "; ".join(problems)
                                   + " (`dealer routes` checks the table)")
    return inbox, publisher


def _not_handled(report: Any) -> str:
    """What ``run --once`` says when a pass could not handle a message or a deadline."""
    parts = []
    if report.failed_messages:
        n = len(report.failed_messages)
        ids = " ".join(str(i) for i in report.failed_messages)
        parts.append(
            f"{n} message{'s' if n != 1 else ''} could not be handled (id{'s' if n != 1 else ''} {ids}): stored as failed, "
            "each sender told. See the log above; once the cause is fixed, "
            f"`dealer inbox retry {ids if n == 1 else '--all'}` replays "
            f"{'it' if n == 1 else 'them'} on the next pass (`dealer inbox list --failed` shows them)."
        )
    if report.failed_deadlines:
        n = len(report.failed_deadlines)
        parts.append(
            f"{n} deadline{'s' if n != 1 else ''} could not be fired "
            f"({', '.join(report.failed_deadlines)}): still pending, tried again on every pass; "
            "until then the game waits. See the log above."
        )
    return " ".join(parts)


def _mention_failed(dealer: Any) -> None:
    """Remind the host of failed messages from earlier passes (on stderr); a store that
    blinks just now only costs the reminder (the pass is done)."""
    from dealer.store.transient import is_transient
    from dealer.store.queries import count_failed_messages

    try:
        with dealer.sessions() as session:
            waiting = count_failed_messages(session)
    except Exception as exc:
        if not is_transient(exc):
            raise
        return
    if waiting:
        click.echo(
            f"note: {waiting} failed message{'s wait' if waiting != 1 else ' waits'} for "
            "`dealer inbox retry` (`dealer inbox list --failed`)",
            err=True,
        )


@click.command()
@click.option("--database", help="SQLite file to use (default a throw-away temporary file).")
def demo(database: str | None) -> None:
    """A whole Stationary Roulette game with scripted players in accelerated time."""
    from dealer.demo import run_demo

    run_demo(database)
