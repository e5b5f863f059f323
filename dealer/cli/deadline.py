"""`dealer deadline`: the admin's deadline overrides (extend, now, at, pause, resume, list)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import click

from dealer.cli.common import _admin, _setting_error, _settings, _time
from dealer.clock import iso, utcnow
from dealer.settings import Settings


@click.group()
def deadline() -> None:
    """Admin deadline overrides: extend, pause, resume, now, at; list shows them.

    Each command rewrites the overrides file (DEALER_OVERRIDES_FILE, default
    HOME/overrides.env) and wakes a running `dealer run` (SIGHUP), which applies the
    change and announces it in the game's channel. GAME[:DEADLINE] is every pending
    deadline of GAME, or the one named (as `dealer game show` lists them).
    """


@deadline.command("extend", context_settings={"ignore_unknown_options": True})
@click.argument("target", metavar="GAME[:DEADLINE]")
@click.argument("change", metavar="+12h")
def deadline_extend(target: str, change: str) -> None:
    """Move the game's pending deadlines (or the one named) later by a change such as
    +12h, 90m, 1h30m or 2d; -30m brings them earlier. Asking twice moves twice."""
    from dealer.shell.overrides import check_duration

    sign = "-" if change.startswith("-") else "+"
    _override(target, sign + _checked(lambda: check_duration(change.lstrip("+-"), f"extend by {change!r}")), moving=True)


@deadline.command("now")
@click.argument("target", metavar="GAME[:DEADLINE]")
def deadline_now(target: str) -> None:
    """Make the game's pending deadlines (or the one named) due now: the daemon
    adjudicates on its next pass."""
    _override(target, "now", moving=True)


@deadline.command("at")
@click.argument("target", metavar="GAME[:DEADLINE]")
@click.argument("when", metavar="ISO-TIME")
def deadline_at(target: str, when: str) -> None:
    """Move one deadline to a UTC time such as 2026-12-02T18:00:00Z (GAME alone when
    the game has a single pending deadline)."""
    at = _time(when, "ISO-TIME")
    assert at is not None
    _override(target, iso(at), moving=True, one_deadline=True)


@deadline.command("pause")
@click.argument("game_id", metavar="GAME")
def deadline_pause(game_id: str) -> None:
    """Pause GAME: it accepts submissions but fires no deadline until `resume`."""
    _override(game_id, "pause", moving=False)


@deadline.command("resume")
@click.argument("game_id", metavar="GAME")
def deadline_resume(game_id: str) -> None:
    """End GAME's pause; its deadlines move later by the time it was paused."""
    from dealer.shell.overrides import parse_overrides, withdraw

    settings = _settings()
    path = Path(settings.overrides_file)
    from_variable = {s.key: s.value for s in _checked(lambda: parse_overrides(settings.deadline_overrides))}
    from_file = {s.key: s.value for s in _checked(lambda: _file_entries(path))}
    if from_variable.get(game_id) == "pause" and from_file.get(game_id, "pause") == "pause":
        raise click.ClickException(
            f"{game_id} is paused by DEALER_DEADLINE_OVERRIDES ({_variable_origin(settings)}), "
            "not by the overrides file: remove the entry there, then restart the daemon"
        )
    if from_file.get(game_id) != "pause":
        raise click.ClickException(f"{game_id} is not paused")
    _checked(lambda: withdraw(path, game_id))
    click.echo(f"{path}: removed {game_id}=pause")
    _wake(settings)


@deadline.command("list")
def deadline_list() -> None:
    """Show the overrides in force, where each comes from, and whether a daemon runs."""
    from dealer.shell.overrides import parse_overrides
    from dealer.shell.pidfile import running_daemon

    settings = _settings()
    path = Path(settings.overrides_file)
    from_variable = _checked(lambda: parse_overrides(settings.deadline_overrides))
    from_file = _checked(lambda: _file_entries(path))
    in_file = {spec.key for spec in from_file}
    click.echo(f"overrides file: {path}{'' if path.exists() else ' (none yet)'}")
    for spec in from_variable:
        shadowed = " (the file's entry wins)" if spec.key in in_file else ""
        click.echo(f"  {spec.key}={spec.value}  from DEALER_DEADLINE_OVERRIDES{shadowed}")
    for spec in from_file:
        click.echo(f"  {spec.key}={spec.value}  from the file")
    if not from_variable and not from_file:
        click.echo("  no overrides")
    pid = running_daemon(settings.pid_file)
    click.echo(f"daemon: {'running, pid ' + str(pid) if pid else 'not running'}")


def _override(target: str, value: str, moving: bool, one_deadline: bool = False) -> None:
    """Write ``target=value`` into the overrides file and wake the daemon."""
    from dealer.shell.overrides import (
        BadOverride, applied_overrides, make_spec, parse_overrides, refusal, request, tagged,
    )

    settings = _settings()
    path = Path(settings.overrides_file)
    game_id, _, name = target.partition(":")
    if "@" in target or (not moving and name):
        raise click.UsageError(f"{target!r}: write GAME{'[:DEADLINE]' if moving else ''}")
    _check_target(game_id, name or None, moving, one_deadline)
    try:
        # A moving change is tagged with the time it was asked for: asking twice moves twice.
        spec = make_spec(tagged(target, utcnow()) if moving else target, value)
    except BadOverride as exc:
        raise click.ClickException(str(exc)) from None
    why = _admin(lambda s: refusal(s, spec, utcnow()))
    if why:
        raise click.ClickException(f"{target}={value} would be refused: {why}")
    if not moving and any(e.key == spec.key and e.value == "pause" for e in _checked(lambda: _file_entries(path))):
        click.echo(f"{game_id} is already paused ({path})")
        return
    applied = _admin(applied_overrides)
    _checked(lambda: request(path, spec, applied))
    click.echo(f"{path}: {spec.key}={spec.value}")
    variable = {s.key: s.value for s in _checked(lambda: parse_overrides(settings.deadline_overrides))}
    if not moving and variable.get(game_id) == "pause":
        click.echo(f"note: DEALER_DEADLINE_OVERRIDES ({_variable_origin(settings)}) pauses {game_id} too")
    _wake(settings)


def _check_target(game_id: str, name: str | None, moving: bool, one_deadline: bool) -> None:
    """Refuse a game that does not exist or is over, and a deadline it does not have.

    An absolute time for a whole game would put all its deadlines (reminders included)
    at that one time, which is never what is meant: ``at`` then needs the deadline's name.
    """
    from dealer.views import game_view

    view = _admin(lambda s: game_view(s, game_id))
    if view["status"] == "finished":
        raise click.ClickException(f"{game_id} is finished: it has no deadline left to change")
    pending = [d["name"] for d in view["deadlines"]]
    if moving and not pending:
        raise click.ClickException(f"{game_id} has no pending deadline")
    if name is not None and name not in pending:
        raise click.ClickException(
            f"{game_id} has no pending deadline {name!r}; its deadlines: {', '.join(pending)}"
        )
    if one_deadline and name is None and len(pending) > 1:
        raise click.ClickException(
            f"{game_id} has several pending deadlines ({', '.join(pending)}): name one, "
            f"as {game_id}:DEADLINE"
        )


def _file_entries(path: Path):  # type: ignore[no-untyped-def]
    from dealer.shell.overrides import parse_overrides, read_file

    return parse_overrides(read_file(path), source=str(path))


def _checked(fn: Callable[[], Any]) -> Any:
    """Run ``fn``; a malformed override source or an unwritable file is one clear line."""
    from dealer.shell.overrides import BadOverride

    try:
        return fn()
    except BadOverride as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise _setting_error("overrides_file", "", exc) from None


def _variable_origin(settings: Settings) -> str:
    return f"the environment or {settings.env_file}" if settings.env_file else "the environment"


def _wake(settings: Settings) -> None:
    from dealer.shell.pidfile import wake_daemon

    click.echo(wake_daemon(settings.pid_file))
