"""`dealer game`: create, list and show games."""

from __future__ import annotations

import json
from typing import Any

import click

from dealer.cli.common import _admin, _json, _time
from dealer.clock import format_utc, parse_time, utcnow


@click.group()
def game() -> None:
    """Create, list and show games."""


@game.command("new")
@click.argument("kind")
@click.option("--id", "game_id", help="The game's id, used in commands and posts (required).")
@click.option("--players", default="", help='Comma-separated player names: --players "alice,Thunder Bob".')
@click.option("--start", "start_text", metavar="ISO-TIME", help="When the game starts (default now).")
@click.option("--start-in-past", is_flag=True, help="Accept a --start more than 5 minutes ago: the deadlines up to now fire at once.")
@click.option("--set", "set_pairs", multiple=True, metavar="KEY=VALUE", help="A game setting (repeatable); see --help-settings.")
@click.option("--channel", help="The game's public channel (default per game).")
@click.option("--help-settings", is_flag=True, help="List KIND's settings, their defaults and rules, and exit.")
def game_new(kind: str, game_id: str | None, players: str, start_text: str | None, start_in_past: bool, set_pairs: tuple[str, ...], channel: str | None, help_settings: bool) -> None:
    """Create a game of KIND: roulette, races or hall."""
    from dealer.shell.admin import create_game, parse_settings
    from dealer.views import NotFound, game_view, settings_help

    if help_settings:
        try:
            rows = settings_help(kind)
        except NotFound as exc:
            raise click.ClickException(str(exc)) from None
        _print_settings(kind, rows)
        return
    if not game_id:
        raise click.UsageError("Missing option '--id'.")
    start = _time(start_text, "--start")
    names = [p.strip() for p in players.split(",") if p.strip()]

    def create(session):  # type: ignore[no-untyped-def]
        create_game(
            session, kind, game_id, utcnow(), players=names, start=start,
            settings=parse_settings(list(set_pairs)), channel=channel,
            start_in_past=start_in_past,
        )
        return game_view(session, game_id)

    view = _admin(create)
    click.echo(f"game {view['id']} ({view['title']}) created: {view['status']} in {view['channel']}")
    for d in view["deadlines"]:
        click.echo(f"  {d['name']}: {d['due_at']}")


def _print_settings(kind: str, rows: list[dict[str, str]]) -> None:
    """``--help-settings``: one line per setting, in columns."""
    header = {"name": "setting", "default": "default", "rule": "rule", "meaning": "meaning"}
    width = {k: max(len(r[k]) for r in [header, *rows]) for k in ("name", "default", "rule")}
    click.echo(f"Settings of {kind} (dealer game new {kind} --set KEY=VALUE):")
    for row in [header, *rows]:
        click.echo(
            f"  {row['name']:<{width['name']}}  {row['default']:<{width['default']}}  "
            f"{row['rule']:<{width['rule']}}  {row['meaning']}".rstrip()
        )
    click.echo("Durations are written like 24h, 90m, 1h30m or 2d (at most 365d; m is minutes, "
               "M is refused). Rules: docs/RULES.md; "
               "I-n: the game's own page in docs/.")


@game.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def game_list(as_json: bool) -> None:
    """List every game."""
    from dealer.views import list_games

    rows = _admin(list_games)
    if _json(rows, as_json):
        return
    if not rows:
        click.echo("no games yet; create one with `dealer game new KIND --id ID`")
    for row in rows:
        nxt = f", next deadline {row['next_deadline']}" if row["next_deadline"] else ""
        click.echo(f"{row['id']}  {row['kind']}  {row['status']}  players: {', '.join(row['players']) or '-'}{nxt}")


@game.command("show")
@click.argument("game_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def game_show(game_id: str, as_json: bool) -> None:
    """Show a game: status, players, scores, deadlines, the history of deadline changes and
    the fairness record (seeds, and every salt, receipt and commitment in full)."""
    from dealer.views import game_view

    view = _admin(lambda s: game_view(s, game_id))
    if _json(view, as_json):
        return
    click.echo(f"{view['id']}: {view['title']} ({view['kind']}), {view['status']}, channel {view['channel']}")
    click.echo(f"players: {', '.join(view['players']) or 'none'}")
    if view["scores"] is not None:
        click.echo("scores: " + ", ".join(f"{k} {v}" for k, v in view["scores"].items()))
    if view["winner"]:
        click.echo(f"winner: {view['winner']}")
    for d in view["deadlines"]:
        paused = " (paused)" if d["paused"] else ""
        failing = f" (COULD NOT BE FIRED, retried every pass: {d['error']})" if d.get("error") else ""
        click.echo(f"deadline {d['name']}: {format_utc(parse_time(d['due_at']))}{paused}{failing}")
    if view["waiting"]:
        click.echo(f"waiting for: {view['waiting']}")
    if "proposals" in view:
        _echo_government(view)
    if view["history"]:
        click.echo("history:")
        for h in view["history"]:
            rest = {k: v for k, v in h.items() if k not in ("seq", "at", "type")}
            click.echo(f"  {h['at']} {h['type']} {json.dumps(rest, ensure_ascii=False)}")
    _echo_fairness(view)


def _echo_government(view: dict[str, Any]) -> None:
    """A Hall's government (GH-20 to GH-34): the Judge, the proposals, the ruleset record
    (the adopted texts in full) and the rulings."""
    click.echo(f"judge: {view['judge'] or 'none'}")
    for p in view["proposals"]:
        click.echo(f"proposal {p['number']} ({p['class']}): {p['status']}, "
                   f"for {p['for']}, against {p['against']}"
                   + (f", ends {p['ends_at']}" if p["status"] == "open" else ""))
    if view["adopted"]:
        click.echo("ruleset record (adopted proposals, GH-22):")
        for a in view["adopted"]:
            text = (a["text"] or "").replace("\n", "\n     ")
            click.echo(f"  {a['number']}. {text} (by {a['author']})")
    for r in view["rulings"]:
        marked = f" [overturned {r['overturned']}]" if r["overturned"] else ""
        click.echo(f"ruling {r['number']} on request {r['request']} by {r['judge']}: "
                   f"{r['text']}{marked}")


def _echo_fairness(view: dict[str, Any]) -> None:
    """The game's fairness record, every hash in full (posts shorten some to 12 digits)."""
    click.echo("fairness record (GH-40):")
    for s in view["seeds"]:
        revealed = s["server_seed"] or "not revealed yet"
        click.echo(f"  seed {s['epoch']}: commitment {s['commitment']}, server seed {revealed}")
        for client in s["client_seeds"]:
            click.echo(f"    client seed: {client}")
    for r in view["sealed"]:
        click.echo(f"  round {r['round']}:")
        for x in r["roulettes"]:
            click.echo(f"    {x['preparer']}'s roulette for {x['bettor']}: {x['colour']}, "
                       f"commitment {x['commitment']}, salt {x['salt']}")
            click.echo(f"      preparation receipt {x['prep_receipt']}: {x['prep_canonical']}")
        for b in r["bets"]:
            click.echo(f"    {b['player']}'s bet: salt {b['salt']}, receipt {b['receipt']}: "
                       f"{b['canonical']}")
