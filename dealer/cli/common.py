"""What the command groups share: the settings, the store, and one-line errors naming their cause."""

from __future__ import annotations

import json
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Callable, Iterator

import click

from dealer import logs
from dealer.clock import parse_time
from dealer.settings import Settings, env_name


def _settings() -> Settings:
    """The settings, read once per command; a bad one ends it with one line naming it."""
    ctx = click.get_current_context(silent=True)
    meta = ctx.find_root().meta if ctx is not None else {}
    if "dealer.settings" not in meta:
        from dealer.detail import set_post_detail
        from dealer.render import set_fairness_url, set_timezone
        from dealer.routes import post_detail_policy

        settings = meta["dealer.settings"] = _read_settings()
        set_fairness_url(settings.fairness_url)  # posts rendered by this command link to it
        set_post_detail(post_detail_policy(settings.post_detail, settings.routes,
                                           settings.publish, settings.web_url))
        set_timezone(settings.timezone)  # and show their times in the game's zone too
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
    """Run ``fn(session)`` in one transaction; an AdminError or NotFound becomes a clean CLI error."""
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


def _route_table(settings: Settings):  # type: ignore[no-untyped-def]
    """The route table of the settings (raises BadRoute)."""
    from dealer.routes import parse_routes

    return parse_routes(settings.routes, settings.publish)
