"""`dealer discord`: the Discord gateway alone, and `dealer discord check`."""

from __future__ import annotations

import click

from dealer.cli.common import _database, _setting_error, _settings
from dealer.extras import missing
from dealer.settings import Settings


@click.group(invoke_without_command=True)
@click.pass_context
def discord(ctx: click.Context) -> None:
    """Run the Discord gateway alone (`dealer discord`): store what it hears for a daemon
    that runs elsewhere on the same store (`dealer run` runs the gateway itself when a route
    listens on Discord). `dealer discord check` says what the setup lacks."""
    if ctx.invoked_subcommand is not None:
        return
    import threading

    from dealer.shell.platforms import DiscordLink
    from dealer.shell.timers import install_signals

    settings = _settings()
    _discord_ready(settings)
    from dealer.store.db import check_schema, make_engine

    with _database(settings):
        engine = make_engine(settings.database_url)
        check_schema(engine)
    link = DiscordLink(settings, engine)
    stop = threading.Event()

    class _Stopper:  # what install_signals sets
        stopping = False
        wake = stop
        reload_requested = False

    install_signals(_Stopper)  # type: ignore[arg-type]
    link.start()
    click.echo("Discord gateway running; Ctrl-C stops it")
    try:
        while not _Stopper.stopping:
            stop.wait(1.0)
            if link.gateway is not None and not link.gateway.thread.is_alive():
                raise click.ClickException(f"the Discord gateway stopped: {link.gateway.error}")
    finally:
        link.stop()


def _discord_ready(settings: Settings) -> None:
    """Refuse early when Discord cannot be used (no extra, no token, no route)."""
    try:
        import discord as _discord  # noqa: F401
        import httpx  # noqa: F401
    except ImportError:
        raise click.ClickException(str(missing("discord", "Discord"))) from None
    if not settings.discord_token:
        raise click.ClickException("DEALER_DISCORD_TOKEN is not set (the bot's token; docs/DISCORD.md)")


@discord.command("check")
def discord_check() -> None:
    """Check the Discord setup step by step and say what is missing (exit 1 if anything)."""
    from dealer.routes import BadRoute
    from dealer.shell.platforms import check_discord

    settings = _settings()
    try:
        lines, ok = check_discord(settings)
    except BadRoute as exc:
        raise _setting_error("routes", "", exc) from None
    for line in lines:
        click.echo(line)
    if not ok:
        raise click.ClickException("the Discord setup is not complete (see above and docs/DISCORD.md)")
