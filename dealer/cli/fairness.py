"""Checking a game after the fact: `verify`, `replay` and `fairness-script` (GH-40)."""

from __future__ import annotations

import sys

import click

from dealer.cli.common import _settings, _store


@click.command()
@click.argument("game_id")
def verify(game_id: str) -> None:
    """Check a game's draws, receipts and commitments against its revealed seeds."""
    from dealer.verify import verify_game

    sessions = _store(_settings())
    with sessions() as session:
        report = verify_game(session, game_id)
    for problem in report.problems:
        click.echo(f"MISMATCH: {problem}")
    if report.unrevealed:
        click.echo(f"not yet revealed (game or phase still running): epochs {report.unrevealed}")
    click.echo(report.line())
    if not report.ok:
        sys.exit(1)


@click.command("fairness-script")
def fairness_script() -> None:
    """Print the players' fairness check script (standard-library Python).

    Send it to a player who asks how to check the draws, seeds, receipts and commitments
    of a game: `dealer fairness-script > fairness_check.py`. docs/FAIRNESS.md explains it.
    """
    from importlib.resources import files

    click.echo(files("dealer").joinpath("fairness_check.py").read_text(encoding="utf-8"), nl=False)


@click.command()
@click.argument("game_id")
def replay(game_id: str) -> None:
    """Rebuild a game from its history and compare it with the stored state.

    Runs the rules again over every step's recorded input (creation, command lines,
    deadlines, client seeds) and prints the first difference from the store; exits 1 on
    a mismatch.
    """
    from dealer.replay import replay_game

    sessions = _store(_settings())
    with sessions() as session:
        try:
            report = replay_game(session, game_id)
        except LookupError as exc:
            raise click.ClickException(str(exc.args[0])) from None
    if not report.ok:
        click.echo(f"MISMATCH: {report.difference}")
        click.echo(f"game {game_id}: {report.steps} steps replayed before the first difference")
        sys.exit(1)
    click.echo(f"game {game_id}: {report.steps} steps replayed; the state, deadlines and fair "
               "source match the store")
