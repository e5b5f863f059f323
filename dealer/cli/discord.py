"""`dealer discord`: the Discord gateway alone, `check`, and the slash commands (`commands`,
`sync`)."""

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
    listens on Discord). `dealer discord check` says what the setup lacks; `commands` and
`sync` show and install the slash commands."""
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


@discord.command("commands")
@click.option("--json", "as_json", is_flag=True, help="Discord's bulk-overwrite payload, as JSON")
def discord_commands(as_json: bool) -> None:
    """The slash commands made from the games' declared commands (no network)."""
    import json

    from dealer.games.slash import payload

    commands = payload()
    if as_json:
        click.echo(json.dumps(commands, indent=2, ensure_ascii=False))
        return
    for command in commands:
        for sub in command["options"]:
            shown = " ".join(o["name"] + ":" if o.get("required") else f"[{o['name']}:]"
                             for o in sub["options"])
            click.echo(f"/{command['name']} {sub['name']} {shown}".rstrip() + f"  — {sub['description']}")


@discord.command("sync")
@click.option("--global", "global_", is_flag=True, help="install everywhere, not per routed server "
              "(Discord may take up to an hour to show global commands)")
@click.option("--clear", is_flag=True, help="remove dealer's slash commands instead")
def discord_sync(global_: bool, clear: bool) -> None:
    """Install the slash commands in each routed channel's server (a bulk overwrite, sent
    only where they differ) and say what changed."""
    from dealer.publish.base import DeliveryFailed
    from dealer.shell.interactions import sync
    from dealer.shell.platforms import discord_rest

    settings = _settings()
    _discord_ready(settings)
    try:
        lines = sync(settings, discord_rest(settings, max_wait=30.0), global_=global_, clear=clear)
    except DeliveryFailed as exc:
        raise click.ClickException(f"the slash commands were not installed: {exc}") from None
    for line in lines:
        click.echo(line)
