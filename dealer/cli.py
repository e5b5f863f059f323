"""The ``dealer`` command (DESIGN.md, "CLI"); ``dealer --help`` lists every subcommand."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

import click

from dealer import logs
from dealer.clock import format_utc, iso, iso_exact, parse_time, utcnow
from dealer.settings import Settings, env_name, find_env_file, unknown_settings
from dealer.text import plural


def _settings() -> Settings:
    """The settings, read once per command; a bad one ends it with one line naming it."""
    ctx = click.get_current_context(silent=True)
    meta = ctx.find_root().meta if ctx is not None else {}
    if "dealer.settings" not in meta:
        from dealer.render import set_fairness_url

        settings = meta["dealer.settings"] = _read_settings()
        set_fairness_url(settings.fairness_url)  # posts rendered by this command link to it
        if settings.log_format != "text":
            logs.configure(verbose=meta.get("dealer.verbose", False), fmt=settings.log_format)
    return meta["dealer.settings"]


def _read_settings() -> Settings:
    from pydantic import ValidationError

    try:
        return Settings()
    except ValidationError as exc:
        problems = "; ".join(
            f"{env_name(str(e['loc'][0])) if e['loc'] else 'a setting'}: {e['msg']}"
            for e in exc.errors()
        )
        raise click.ClickException(problems) from None


def _setting_error(name: str, what: str, exc: BaseException) -> click.ClickException:
    """One line naming the setting (``DEALER_INBOX``), what was wrong and why."""
    reason = getattr(exc, "orig", None) or exc
    lines = (getattr(reason, "strerror", None) or str(reason)).strip().splitlines()
    detail = lines[0] if lines else type(reason).__name__
    if isinstance(reason, OSError) and reason.filename:
        detail += f" ({reason.filename})"
    return click.ClickException(f"{env_name(name)}: {what + ': ' if what else ''}{detail}")


@contextmanager
def _database(settings: Settings) -> Iterator[None]:
    """Turn a store that cannot be opened or reached into one line naming the setting."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

    from dealer.store.db import SchemaOutOfDate

    try:
        yield
    except SchemaOutOfDate as exc:
        raise click.ClickException(str(exc)) from None
    except (ArgumentError, NoSuchModuleError) as exc:
        raise _setting_error("database_url", "not a database URL dealer can use", exc) from None
    except (DBAPIError, OSError) as exc:
        try:
            shown = make_url(settings.database_url).render_as_string(hide_password=True)
        except ArgumentError:
            shown = "the store"
        raise _setting_error("database_url", f"cannot reach {shown}", exc) from None


def _time(value: str | None, option: str) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_time(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO time such as 2026-12-01T10:00:00Z", param_hint=option)


def _store(settings: Settings, check: bool = True):  # type: ignore[no-untyped-def]
    from dealer.store.db import check_schema, make_engine, session_factory

    with _database(settings):
        engine = make_engine(settings.database_url)
        if check:
            check_schema(engine)
    return session_factory(engine)


def _json(view: Any, as_json: bool) -> bool:
    """Print ``view`` as JSON when asked; True if it was printed."""
    if as_json:
        click.echo(json.dumps(view, indent=2, ensure_ascii=False))
    return as_json


def _admin(fn: Callable[..., Any]) -> Any:
    """Run ``fn(session)`` in one transaction; an AdminError (or a view's NotFound) becomes
    a clean CLI error."""
    from dealer.shell.admin import AdminError
    from dealer.shell.failures import NotRetried
    from dealer.shell.steps import GameHeld
    from dealer.views import NotFound

    sessions = _store(_settings())
    try:
        with sessions.begin() as session:
            return fn(session)
    except (AdminError, NotFound, NotRetried, GameHeld) as exc:
        raise click.ClickException(str(exc)) from None


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
    for warning in unknown_settings(env_file=find_env_file()):
        logging.getLogger("dealer.settings").warning(warning)


@main.command()
def migrate() -> None:
    """Create or upgrade the store's schema."""
    from dealer.store.db import current_revision, make_engine, migrate as do_migrate

    settings = _settings()
    with _database(settings):
        engine = make_engine(settings.database_url)
        before = current_revision(engine)
        after = do_migrate(engine)
    if before == after:
        click.echo(f"schema already at revision {after}")
    else:
        click.echo(f"schema migrated from {before or 'nothing'} to revision {after}")


@main.command()
@click.option("--once", is_flag=True, help="One pass (ingest, fire due deadlines, deliver), then exit.")
@click.option("--now", "now_text", metavar="ISO-TIME", help="With --once: act as if the clock read this time.")
def run(once: bool, now_text: str | None) -> None:
    """Run the daemon (or one pass of it with --once)."""
    from dealer.shell.passes import Dealer
    from dealer.shell.pidfile import pid_file

    now = _time(now_text, "--now")
    if now and not once:
        raise click.UsageError("--now goes with --once")
    settings = _settings()
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
                    dealer.run_forever()
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
        raise _setting_error("routes", "Discord routes need dealer[discord] (pip install 'dealer[discord]')", exc) from None


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
            "the status page needs the extra dealer[web]: pip install 'dealer[web]'"
        ) from None
    from dealer import web

    return web


def _serve_web_beside(settings: Settings) -> None:
    """DEALER_WEB: the status page in a thread of `dealer run`."""
    web = _web_module()
    # No schema check here: `dealer run` waits for a store that is down at start, and the
    # page answers 503 until the store does.
    web.serve_in_thread(_store(settings, check=False), settings.web_host, settings.web_port)


@main.command()
@click.option("--host", default=None, help="Address to bind (default DEALER_WEB_HOST, 127.0.0.1).")
@click.option("--port", type=int, default=None, help="Port (default DEALER_WEB_PORT, 8080).")
def serve(host: str | None, port: int | None) -> None:
    """Serve the read-only status page: /, /games/ID, /players/NAME and their JSON
    (/api/games/ID, /api/players/NAME). Needs dealer[web]."""
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
        raise _setting_error("routes", "Discord routes need dealer[discord] (pip install 'dealer[discord]')", exc) from None
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
    from dealer.views import count_failed

    try:
        with dealer.sessions() as session:
            waiting = count_failed(session)
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


@main.group()
def player() -> None:
    """Add and show players."""


@player.command("add")
@click.argument("name")
@click.option("--chips", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--vertebrae", type=click.IntRange(min=0), default=0, show_default=True)
def player_add(name: str, chips: int, vertebrae: int) -> None:
    """Register player NAME (with starting chips and vertebrae from the mint).

    NAME is any printable name of up to 64 characters; quote one with spaces
    ("Thunder Bob"). Names match ignoring case, width and spacing, and a name that looks
    like an existing player's (Cyrillic 'а' for 'a', I for l, 0 for O) is refused. A name
    may not hold '@', ',' or control characters.
    """
    from dealer.shell.admin import add_player

    added = _admin(lambda s: add_player(s, name, utcnow(), chips=chips, vertebrae=vertebrae).name)
    click.echo(f"player {added} added with {plural(chips, 'chip')} and {plural(vertebrae, 'vertebra', 'vertebrae')}")


@player.command("link")
@click.argument("name")
@click.argument("account")
def player_link(name: str, account: str) -> None:
    """Link ACCOUNT (PLATFORM:ID: discord:80351110224678912, email:alice@example.org or
    discourse:USERNAME) to player NAME.

    Messages from that account are NAME's (whatever display name it shows), and posts for
    NAME reach it (Discord DMs, pings). One account per platform per player."""
    from dealer.shell.admin import link_account

    shown, linked = _admin(lambda s: link_account(s, name, account, utcnow()))
    click.echo(f"{linked} linked to player {shown}")


@player.command("unlink")
@click.argument("account")
def player_unlink(account: str) -> None:
    """Unlink ACCOUNT (PLATFORM:ID) from its player."""
    from dealer.shell.admin import unlink_account

    shown = _admin(lambda s: unlink_account(s, account))
    click.echo(f"{account} unlinked from player {shown}")


@player.command("show")
@click.argument("name")
@click.option("--game", "game_id", metavar="ID", help="Show NAME's inventory in Hall cycle ID (GH-1).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def player_show(name: str, game_id: str | None, as_json: bool) -> None:
    """Show NAME's chips, vertebrae, cards, packs and games (the wallet, or with --game the
    inventory in a Hall cycle: a cycle's inventories are its own)."""
    from dealer.views import player_view

    view = _admin(lambda s: player_view(s, name, game_id))
    if _json(view, as_json):
        return
    if game_id:
        joined = "" if view["member"] else " (has not joined it)"
        click.echo(f"{view['name']} in cycle {view['game']}{joined}:")
    click.echo(f"{view['name']}: {plural(view['chips'], 'chip')}, {plural(view['vertebrae'], 'vertebra', 'vertebrae')}")
    click.echo(f"cards: {', '.join(view['cards']) or 'none'}")
    packs = ", ".join(plural(n, f"{k} pack") for k, n in view["packs"].items())
    click.echo(f"packs: {packs or 'none'}")
    click.echo(f"games: {', '.join(view['games']) or 'none'}")


@main.command()
@click.argument("name")
@click.argument("item")
@click.argument("amount", type=int)
@click.option("--game", "game_id", metavar="ID", help="Grant into NAME's inventory in Hall cycle ID (GH-1).")
def grant(name: str, item: str, amount: int, game_id: str | None) -> None:
    """Give NAME AMOUNT of ITEM: chips, vertebrae, a card ("king of spades") or a pack ("handy pack").

    It goes to NAME's wallet, or with --game into NAME's inventory in that Hall cycle.
    """
    from dealer.cards import display
    from dealer.shell.admin import grant as do_grant

    item_id, held = _admin(lambda s: do_grant(s, name, item, amount, utcnow(), game_id))
    where = f" in cycle {game_id}" if game_id else ""
    click.echo(f"granted {amount} x {display(item_id)} to {name}{where}; now holds {held}{where and ' there'}")


@main.group()
def game() -> None:
    """Create, list and show games."""


@game.command("new")
@click.argument("kind")
@click.option("--id", "game_id", help="The game's id, used in commands and posts (required).")
@click.option("--players", default="", help='Comma-separated player names: --players "alice,Thunder Bob".')
@click.option("--start", "start_text", metavar="ISO-TIME", help="When the game starts (default now).")
@click.option("--set", "set_pairs", multiple=True, metavar="KEY=VALUE", help="A game setting (repeatable); see --help-settings.")
@click.option("--channel", help="The game's public channel (default per game).")
@click.option("--help-settings", is_flag=True, help="List KIND's settings, their defaults and rules, and exit.")
def game_new(kind: str, game_id: str | None, players: str, start_text: str | None, set_pairs: tuple[str, ...], channel: str | None, help_settings: bool) -> None:
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
    click.echo("Durations are written like 24h, 90m, 1h30m or 2d. Rules: docs/RULES.md; "
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


@main.command()
@click.option("--from", "sender", required=True, help="The player who sent the message.")
@click.option("--channel", default="pm", show_default=True, help="pm, or a channel such as #the-raceway.")
@click.option("--game", "game_id", help="The game the message is for.")
@click.option("--at", "at_text", metavar="ISO-TIME", help="When the player sent it (default now).")
@click.option("--id", "message_id", help="The message's id (default a fresh one).")
@click.option("--react", "react_to", metavar="TARGET", help="A reaction on message or post TARGET; TEXT is the emoji.")
@click.option("--removed", is_flag=True, help="With --react: the reaction is taken back.")
@click.option("--edit", "edit_of", metavar="TARGET", help="An edit of message TARGET; TEXT is its new text.")
@click.option("--delete", "delete_of", metavar="TARGET", help="The deletion of message TARGET (no TEXT).")
@click.argument("text", nargs=-1)
def submit(sender: str, channel: str, game_id: str | None, at_text: str | None, message_id: str | None,
           react_to: str | None, removed: bool, edit_of: str | None, delete_of: str | None,
           text: tuple[str, ...]) -> None:
    """Drop a message into the inbox (how a human dealer forwards a PM), or a reaction, an
    edit or a deletion (how one forwards a vote on a proposal: ``--react ID 👍``).

    TEXT is the message; quote it, or use \\n-separated lines for several commands.
    """
    from dealer.inbox.base import InboxMessage, Unreadable

    settings = _settings()
    kind, _, path = settings.inbox.partition(":")
    if kind != "dir":
        raise click.ClickException(f"submit writes to a directory inbox; DEALER_INBOX is {settings.inbox!r}")
    sent = _time(at_text, "--at") or utcnow()
    body = " ".join(text).replace("\\n", "\n")
    targets = [(k, t) for k, t in (("reaction", react_to), ("edit", edit_of), ("delete", delete_of)) if t]
    if len(targets) > 1:
        raise click.UsageError("give one of --react, --edit and --delete")
    event_kind, target = targets[0] if targets else ("message", None)
    if removed and event_kind != "reaction":
        raise click.UsageError("--removed goes with --react")
    if event_kind == "delete" and text:
        raise click.UsageError("a deletion has no TEXT")
    if event_kind != "delete" and not body.strip():
        raise click.UsageError("Missing argument 'TEXT'" + (" (the emoji)" if react_to else "."))
    if message_id is not None and not _FILE_SAFE_ID.fullmatch(message_id):
        raise click.BadParameter(
            f"{message_id!r} cannot be part of a file name: use letters, digits and . _ - : @ # + "
            "(at most 200 characters)", param_hint="--id",
        )
    ident = message_id or f"cli-{sent:%Y%m%dT%H%M%S%f}-{uuid.uuid4().hex[:12]}"
    # sent_at keeps its microseconds: two PMs sent within one second keep their order.
    message: dict[str, Any] = {"id": ident, "sender": sender, "channel": channel, "body": body,
                               "sent_at": iso_exact(sent)}
    if game_id:
        message["game"] = game_id
    if event_kind != "message":
        message.update(kind=event_kind, target=target)
        if event_kind == "reaction":
            message.update(emoji=body.strip(), body="")
            if removed:
                message["removed"] = True
    text_out = json.dumps(message, ensure_ascii=False, indent=2) + "\n"
    try:  # what the daemon would refuse is refused here, before a file is written
        InboxMessage.from_json(text_out)
    except Unreadable as exc:
        raise click.ClickException(f"the message would not be read: {exc}") from None
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _setting_error("inbox", f"cannot use {settings.inbox!r}", exc) from None
    # The inbox reads files by modification time, then name: the name is the moment the file
    # was written (to the nanosecond), so two messages forwarded within one tick of the file
    # system's clock are still read, and their exact sent_at ties broken, in the order given.
    # It is written under a hidden name and renamed: the daemon never sees half of it.
    target = folder / f"{_arrival_stamp()}-{ident}.json"
    temporary = folder / f".{target.name}.{os.getpid()}.tmp"
    try:
        temporary.write_text(text_out, encoding="utf-8")
        temporary.replace(target)
    except OSError as exc:
        raise _setting_error("inbox", f"cannot write into {settings.inbox!r}", exc) from None
    finally:
        temporary.unlink(missing_ok=True)
    click.echo(f"queued {target}")


_FILE_SAFE_ID = re.compile(r"[A-Za-z0-9._:@#+-]{1,200}")
"""An id ``dealer submit`` can put in a file name (the inbox itself takes any id)."""


def _arrival_stamp() -> str:
    """``20261201T100000.123456789Z``: the wall-clock time now, to the nanosecond."""
    ns = time.time_ns()
    seconds, fraction = divmod(ns, 1_000_000_000)
    return f"{datetime.fromtimestamp(seconds, timezone.utc):%Y%m%dT%H%M%S}.{fraction:09d}Z"


@main.command()
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
            problems.append("Discord routes need dealer[discord]: pip install 'dealer[discord]'")
    if problems:
        raise click.ClickException("the routes cannot work:\n  " + "\n  ".join(problems))
    click.echo("routes OK")


@main.group(invoke_without_command=True)
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
        raise click.ClickException("Discord needs dealer[discord]: pip install 'dealer[discord]'") from None
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


def _route_table(settings: Settings):  # type: ignore[no-untyped-def]
    """The route table of the settings (raises BadRoute)."""
    from dealer.routes import parse_routes

    return parse_routes(settings.routes, settings.publish)


@main.group()
def inbox() -> None:
    """Stored messages: list them, replay the ones dealer could not handle."""


@inbox.command("list")
@click.option("--failed", is_flag=True, help="Only the messages dealer could not handle, with their error.")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="At most this many, newest first.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def inbox_list(failed: bool, limit: int, as_json: bool) -> None:
    """List the newest stored messages and what became of them."""
    from dealer.views import list_messages

    rows = _admin(lambda s: list_messages(s, failed=failed, limit=limit))
    if _json(rows, as_json):
        return
    if not rows:
        click.echo("no failed messages" if failed else "no messages stored yet")
        return
    for row in rows:
        first = (row["body"].strip().splitlines() or [""])[0]
        click.echo(f"{row['id']}  {row['status']}  {row['sent_at']}  from {row['sender']} ({row['channel']})  id {row['message_id']}")
        click.echo(f"    > {first[:100]}")
        if row["error"]:
            click.echo(f"    error: {row['error']}")
    if any(row["status"] == "failed" for row in rows):
        click.echo("Once the cause is fixed: `dealer inbox retry ID` (or `--all`), then the next pass applies them.")


@inbox.command("retry")
@click.argument("ids", nargs=-1)
@click.option("--all", "retry_all", is_flag=True, help="Every failed message.")
def inbox_retry(ids: tuple[str, ...], retry_all: bool) -> None:
    """Put failed messages back to pending: the next pass applies them.

    IDS are the numbers `dealer inbox list` shows (or the messages' own ids). Each is
    applied at its own sent_at, to the game as it stands when the pass runs.
    """
    from dealer.shell.failures import retry_messages

    if retry_all == bool(ids):
        raise click.UsageError("name the messages to retry (IDS), or give --all")
    rows = _admin(lambda s: retry_messages(s, None if retry_all else list(ids)))
    if not rows:
        click.echo("no failed messages to retry")
        return
    for row in rows:
        click.echo(f"message {row['id']} from {row['sender']} is pending again (it had failed: {row['error']})")
    click.echo("The next pass applies them: `dealer run --once`, or a running `dealer run` within its poll interval.")


@main.group()
def outbox() -> None:
    """Queued posts: list them, re-queue the ones parked after failing every attempt."""


@outbox.command("list")
@click.option("--failed", is_flag=True, help="Only the parked posts, with their error.")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="At most this many, newest first.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def outbox_list(failed: bool, limit: int, as_json: bool) -> None:
    """List the newest posts and whether each was delivered, waits, is parked or dropped."""
    from dealer.views import list_posts

    rows = _admin(lambda s: list_posts(s, failed=failed, limit=limit))
    if _json(rows, as_json):
        return
    if not rows:
        click.echo("no parked posts" if failed else "no posts queued yet")
        return
    for row in rows:
        where = f"PM to {row['recipient']}" if row["recipient"] else row["channel"]
        status = row["status"] if row["status"] != "failed" else "PARKED"
        click.echo(f"{row['id']}  {status}  {row['created_at']}  {where}  game {row['game'] or '-'}  "
                   f"{row['kind']}  attempts {row['attempts']}")
        click.echo(f"    {row['subject'][:100]}")
        if row["status"] == "pending" and row["next_attempt_at"]:
            click.echo(f"    next attempt at {row['next_attempt_at']}")
        if row["error"] and row["status"] != "delivered":
            click.echo(f"    error: {row['error']}")
    if any(row["status"] == "failed" for row in rows):
        click.echo("A parked post holds back the later posts to the same place. Once the cause is "
                   "fixed: `dealer outbox retry ID` (or `--all`).")


@outbox.command("retry")
@click.argument("ids", nargs=-1, type=int)
@click.option("--all", "retry_all", is_flag=True, help="Every parked post.")
def outbox_retry(ids: tuple[int, ...], retry_all: bool) -> None:
    """Re-queue parked posts (IDS as `dealer outbox list --failed` shows them): the next
    pass sends them, each destination's posts in order."""
    from dealer.shell.delivery import NotParked, retry_posts

    if retry_all == bool(ids):
        raise click.UsageError("name the posts to retry (IDS), or give --all")
    try:
        rows = _admin(lambda s: [(p.id, p.recipient or p.channel, p.last_error)
                                 for p in retry_posts(s, None if retry_all else list(ids))])
    except NotParked as exc:
        raise click.ClickException(str(exc)) from None
    if not rows:
        click.echo("no parked posts to retry")
        return
    for post_id, where, error in rows:
        click.echo(f"post {post_id} to {where} is queued again (it had failed: {error})")
    click.echo("The next pass sends them: `dealer run --once`, or a running `dealer run` within its poll interval.")


@main.command()
@click.option("--now", "now_text", metavar="ISO-TIME", help="Check as if the clock read this time.")
def health(now_text: str | None) -> None:
    """Exit 0 when all is well: the store answers, its schema is current, no deadline is
    overdue by more than a minute and no post is parked; else exit 1 and say why."""
    from dealer.health import check_health
    from dealer.store.db import make_engine

    settings = _settings()
    with _database(settings):
        engine = make_engine(settings.database_url)
    try:
        found = check_health(engine, _time(now_text, "--now") or utcnow())
    finally:
        engine.dispose()
    if found.ok:
        click.echo("healthy")
        return
    for problem in found.problems:
        click.echo(f"unhealthy: {problem}", err=True)
    sys.exit(1)


@main.command()
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


@main.command("fairness-script")
def fairness_script() -> None:
    """Print the players' fairness check script (standard-library Python).

    Send it to a player who asks how to check the draws, seeds, receipts and commitments
    of a game: `dealer fairness-script > fairness_check.py`. docs/FAIRNESS.md explains it.
    """
    from importlib.resources import files

    click.echo(files("dealer").joinpath("fairness_check.py").read_text(encoding="utf-8"), nl=False)


@main.command()
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


@main.command()
@click.option("--database", help="SQLite file to use (default a throw-away temporary file).")
def demo(database: str | None) -> None:
    """A whole Stationary Roulette game with scripted players in accelerated time."""
    from dealer.demo import run_demo

    run_demo(database)


@main.group()
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


if __name__ == "__main__":
    main()
