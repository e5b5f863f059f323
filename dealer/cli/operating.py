"""Setting up and checking an installation: `migrate`, `health` and `routes`."""

from __future__ import annotations

import sys

import click

from dealer.cli.common import _database, _route_table, _setting_error, _settings, _time
from dealer.clock import utcnow
from dealer.extras import missing


@click.command()
def migrate() -> None:
    """Create or upgrade the store's schema."""
    from dealer.store.db import current_revision, head_revision, make_engine, migrate as do_migrate

    settings = _settings()
    with _database(settings):
        engine = make_engine(settings.database_url)
        before = current_revision(engine)
        # Run before every start (deploy/): a current schema is told without Alembic.
        after = before if before == head_revision() else do_migrate(engine)
    if before == after:
        click.echo(f"schema already at revision {after}")
    else:
        click.echo(f"schema migrated from {before or 'nothing'} to revision {after}")


@click.command()
@click.option("--now", "now_text", metavar="ISO-TIME", help="Check as if the clock read this time.")
def health(now_text: str | None) -> None:
    """Exit 0 when all is well: the store answers, its schema is current, no deadline is
    overdue by more than a minute and no post is parked; else exit 1 and say why."""
    from dealer.health import check_health
    from dealer.store.db import make_engine

    settings = _settings()
    with _database(settings):
        engine = make_engine(settings.database_url)
    from dealer.inbox import AUTH_OFF_WARNING

    mail_unchecked = settings.inbox.startswith("imap") and settings.email_auth == "off"
    try:
        found = check_health(engine, _time(now_text, "--now") or utcnow(),
                             auth_off=AUTH_OFF_WARNING if mail_unchecked else None)
    finally:
        engine.dispose()
    for warning in found.warnings:
        click.echo(f"warning: {warning}", err=True)
    if found.ok:
        click.echo("healthy")
        return
    for problem in found.problems:
        click.echo(f"unhealthy: {problem}", err=True)
    sys.exit(1)


@click.command()
def routes() -> None:
    """Print the routes in force (DEALER_ROUTES: which transport serves which channel) and
    check them; exit non-zero when one cannot work."""
    from dealer.routes import BadRoute

    settings = _settings()
    try:
        table = _route_table(settings)
    except BadRoute as exc:
        raise _setting_error("routes", "", exc) from None
    for line in table.lines():
        click.echo(line)
    problems = table.problems(
        discord_token=bool(settings.discord_token), webhook_url=bool(settings.discord_webhook_url),
        smtp_server=bool(settings.smtp_server.strip()), discourse_url=bool(settings.discourse_url.strip()))
    if table.uses("discord"):
        try:
            import discord  # noqa: F401
            import httpx  # noqa: F401
        except ImportError:
            problems.append(str(missing("discord", "Discord routes")))
    if problems:
        raise click.ClickException("the routes cannot work:\n  " + "\n  ".join(problems))
    click.echo("routes OK")
