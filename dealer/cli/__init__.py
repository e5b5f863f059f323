"""The ``dealer`` command (DESIGN.md, "CLI"): one module per command group, composed here
under ``main``; ``common`` holds what they share. ``dealer --help`` lists every subcommand."""

from __future__ import annotations

from pathlib import Path

import click

from dealer import logs
from dealer.cli import daemon, deadline, discord, fairness, game, inbox, operating, outbox, player
from dealer.settings import Settings, find_env_file, unknown_settings

__all__ = ["main"]


class _Dealer(click.Group):
    """The top-level group: its help ends by saying where the data folder is."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_epilog(ctx, formatter)
        from pydantic import ValidationError

        try:
            settings = Settings()
        except ValidationError as exc:
            lines = [f"Data folder: unknown, the settings cannot be read ({exc.error_count()} problem(s))."]
        else:
            found = str(settings.env_file) if settings.env_file else f"none found in {Path.cwd()} or above"
            lines = [f"Data folder (DEALER_HOME): {settings.home}", f"Settings file (.env): {found}"]
        formatter.write_paragraph()
        for line in lines:  # written whole: a path is never wrapped
            formatter.write(line + "\n")


@click.group(cls=_Dealer, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Log every step.")
def main(verbose: bool) -> None:
    """dealer: moderates forum, Discord and PM casino games.

    Settings come from the environment or .env (prefix DEALER_; see .env.example). The
    .env is the nearest one in the current folder or above it; the data folder
    (DEALER_HOME, default ./var beside that .env) holds the SQLite store, the inbox, the
    outbox and the overrides file unless a setting puts them elsewhere.
    """
    click.get_current_context().meta["dealer.verbose"] = verbose
    logs.configure(verbose=verbose)
    unknown = unknown_settings(env_file=find_env_file())
    if unknown:
        # Refused, not warned about: DEALER_DATABSE_URL would otherwise run on the default
        # store, a place the host never meant, and write there.
        raise click.ClickException(
            " ".join(unknown) + " dealer does not start with a setting it does not know: "
            "correct or remove it"
        )


main.add_command(daemon.run)
main.add_command(daemon.serve)
main.add_command(daemon.demo)
main.add_command(operating.migrate)
main.add_command(operating.health)
main.add_command(operating.routes)
main.add_command(game.game)
main.add_command(player.player)
main.add_command(player.grant)
main.add_command(inbox.submit)
main.add_command(inbox.inbox)
main.add_command(outbox.outbox)
main.add_command(deadline.deadline)
main.add_command(discord.discord)
main.add_command(fairness.verify)
main.add_command(fairness.replay)
main.add_command(fairness.fairness_script)
