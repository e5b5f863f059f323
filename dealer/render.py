"""Rendering posts from the Jinja templates under ``templates/``.

Every ``{{ value }}`` a template prints is escaped by :func:`dealer.text.escape_post`
unless it is a number or was marked safe by one of dealer's own filters, so player text
can never carry markup or mentions into a post.

Filters every template may use: ``utc`` (an absolute time in UTC, and in the zone of
:func:`set_timezone` beside it) and ``iso``, ``signed``
(``+3``), ``plural`` (``{{ n|plural("chip") }}`` is ``1 chip`` / ``2 chips``; see
:func:`dealer.text.plural`), ``duration`` (a timedelta as
:func:`dealer.clock.format_duration` writes it), ``short`` (a 64-hex hash cut to its first
12 hex digits, for posts that list many) and ``trusted``. Every template also sees
``relative(when)`` (``in 23 h 59 min``) and ``fairness_check``, where players find the
fairness check (the host's ``DEALER_FAIRNESS_URL``, or the host itself).

The templates are found from the package, never from the current directory: see
:func:`templates_dir`. Only Jinja's public API is used (its ``finalize``, filters and
``Environment.getattr``), so it holds across Jinja releases (tests/unit/test_dependencies.py).
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, MutableMapping
from zoneinfo import ZoneInfo

from jinja2 import ChoiceLoader, Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from dealer.clock import format_duration, format_relative, format_utc, format_utc_and_local, iso, local_zone
from dealer.detail import BRIEF, detail_for, post_detail
from dealer.games.base import PostDraft
from dealer.text import escape_post, plural

_MARKER = Path("common") / "error.txt"
"""A template every copy of dealer's templates has: tells them from a stray folder."""


class TemplatesMissing(RuntimeError):
    """dealer's own templates are not installed with the package."""


def templates_dir() -> Path:
    """The folder of dealer's own templates, wherever and however dealer is installed.

    A wheel (``pip install .``, pipx, a packager) carries the repository's top-level
    ``templates/`` inside the package as ``dealer/templates`` (pyproject.toml maps it
    there). An editable install or a source checkout has no such folder; the templates are
    then the repository's own ``templates/`` beside the package. The current directory
    plays no part.
    """
    packaged = resources.files("dealer") / "templates"
    if packaged.is_dir():
        return Path(str(packaged))
    source = Path(__file__).resolve().parent.parent / "templates"
    if (source / _MARKER).is_file():
        return source
    raise TemplatesMissing(
        f"dealer's templates are not installed: neither {packaged} nor {source} holds them. "
        "Reinstall dealer from its repository or a wheel built from it."
    )


_EXTRA_DIRS: list[str] = []
SHORT_HASH = 12
"""How many hex digits of a hash a post shows where it lists many (round results)."""

_fairness_url: str | None = None


def set_fairness_url(url: str | None) -> None:
    """Where posts send players for the fairness check (``DEALER_FAIRNESS_URL``).

    The shell calls this once it has read its settings (the daemon at start and on
    SIGHUP, every CLI command); until then, and with no URL, posts say that the host has
    the procedure and can send it.
    """
    global _fairness_url, _fairness_words
    _fairness_url = url or None
    _fairness_words = _fairness_check_words(_fairness_url)


def _fairness_check_words(url: str | None) -> Markup:
    if url:
        # The host's own setting, validated as an http(s) URL: left unescaped so it links.
        return Markup(f"the procedure and its script are at {url}")
    return Markup(
        "the host has the procedure and its script and can send them to you "
        "(the host prints the script with `dealer fairness-script`)"
    )


_fairness_words = _fairness_check_words(None)
"""What :func:`fairness_check` returns, made once per setting, not once per post."""


def fairness_check() -> Markup:
    """The words that tell a player where the fairness check is: a link, or the host."""
    return _fairness_words


def add_template_dir(directory: str | Path) -> None:
    """Also look for templates in ``directory`` (for rulesets that live outside dealer)."""
    if str(directory) not in _EXTRA_DIRS:
        _EXTRA_DIRS.append(str(directory))
        environment.cache_clear()
        _VARIANTS.clear()


_ESCAPED: dict[str, str] = {}
"""Player text as :func:`escape_post` wrote it, by the text: a post prints the same names,
colours and sealed texts again and again (a round result about 60 values, most of them a
dozen names), and a look-up here costs less than testing the text again (a round
result's rendering takes 23 % fewer instructions with it: bench/render.py). Only exact
``str`` values are looked up (a ``Markup`` equal to a cached text is never escaped);
bounded: emptied when it holds :data:`_ESCAPED_MAX` texts, and long texts are not kept."""
_ESCAPED_MAX = 4096
_ESCAPED_CHARS = 200


def _finalize(value: Any) -> Any:
    """What ``{{ value }}`` prints (Jinja's ``finalize``): player text escaped by
    :func:`escape_post`; a number, or a ``Markup`` (a filter's or dealer's own text), as
    it is; ``None`` as nothing; anything else as its escaped ``str``."""
    if type(value) is str:  # the common case first (a Markup is a str, but not of this type)
        try:
            return _ESCAPED[value]
        except KeyError:
            text = escape_post(value)
            if len(value) <= _ESCAPED_CHARS:
                if len(_ESCAPED) >= _ESCAPED_MAX:
                    _ESCAPED.clear()
                _ESCAPED[value] = text
            return text
    if isinstance(value, (Markup, int, float)):
        return value
    return "" if value is None else escape_post(value)


_DICT_ATTRIBUTES = frozenset(dir(dict))


class _Environment(Environment):
    """Jinja's environment, with ``value.name`` looked up first as a key in a plain dict.

    The posts' contexts are dicts, and Jinja tries an attribute first: for ``r.preparer``
    it raises and catches an AttributeError before reading the key, dozens of times per
    post (a round result's rendering takes 45 % fewer instructions with this). A name a
    dict has as an attribute (``items``, ``get``) still finds the attribute, so every
    template reads exactly what it would read with Jinja's own ``getattr``."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)

    def make_globals(self, d: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
        """A template's globals as a plain dict, not Jinja's ``ChainMap`` over the
        environment's: every render copies them into its context and their names into a
        set, which a ``ChainMap`` does key by key in Python (a round result's rendering
        takes 11 % fewer instructions with this).
        Nothing changes the globals once the environment is made."""
        return {**self.globals, **(d or {})}


_zone: ZoneInfo | None = None
"""The zone posts show beside UTC (``DEALER_TIMEZONE``); None: UTC only."""


def set_timezone(name: str) -> None:
    """Show every absolute time of a post in the zone ``name`` too, beside UTC
    (``DEALER_TIMEZONE``; "" or UTC: UTC only). Set by the shell with its settings, as
    :func:`set_fairness_url` is. Raises ValueError for an unknown zone."""
    global _zone
    _zone = local_zone(name)


def _utc(value: datetime) -> Markup:
    # Every absolute time a template prints comes through here: ``2026-12-02 09:02 UTC``,
    # with the game's zone beside it when one is set (``/ 10:02 CET``). The Discord format
    # turns the whole into a timestamp tag (dealer.formats), which every reader sees in
    # their own zone.
    return Markup(format_utc_and_local(value, _zone) if _zone is not None else format_utc(value))


def _signed(value: int) -> Markup:
    return Markup(f"{value:+d}")


_PLURALS: dict[tuple[int, str, str | None], Markup] = {}
"""The ``plural`` filter's output by its arguments (an int count): the standings print
two per player in every result and phase post (11 % of a round result's rendering).
Emptied when it holds 4,096."""


def _plural(count: int, singular: str, plural_form: str | None = None) -> Markup:
    # The count is a number and the words come from the template itself.
    if type(count) is not int:
        return Markup(escape_post(plural(int(count), singular, plural_form)))
    key = (count, singular, plural_form)
    try:
        return _PLURALS[key]
    except KeyError:
        if len(_PLURALS) >= _ESCAPED_MAX:
            _PLURALS.clear()
        _PLURALS[key] = words = Markup(escape_post(plural(count, singular, plural_form)))
        return words


def _short(value: str) -> Markup:
    text = str(value)
    if len(text) <= SHORT_HASH or text.strip("0123456789abcdef"):  # not all hex digits
        return Markup(escape_post(text))
    return Markup(text[:SHORT_HASH] + "…")


@lru_cache(maxsize=4)
def environment(directory: str | None = None) -> Environment:
    """The Jinja environment of dealer's templates (cached per directory)."""
    env = _Environment(
        loader=ChoiceLoader(
            [FileSystemLoader(directory or str(templates_dir()))] + [FileSystemLoader(d) for d in _EXTRA_DIRS]
        ),
        undefined=StrictUndefined,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
        auto_reload=False,  # templates ship with the code; no stat() per render
    )
    env.filters["utc"] = _utc
    env.filters["iso"] = lambda v: Markup(iso(v))
    env.filters["signed"] = _signed
    env.filters["plural"] = _plural
    env.filters["duration"] = lambda v: Markup(format_duration(v))
    env.filters["short"] = _short
    env.filters["trusted"] = Markup  # for dealer's own fixed strings (channel names, ids)
    return env


def _render(template: str, now: datetime, directory: str | None, context: dict[str, Any],
            defaults: dict[str, Any] | None = None) -> str:
    """``templates/<template>`` rendered with ``now``, ``relative`` and ``fairness_check``
    over the context, which is over ``defaults``; stripped, one final newline."""
    if "now" in context or "relative" in context:
        raise TypeError("a post's context cannot set 'now' or 'relative': render() sets them")
    variables = {"fairness_check": _fairness_words, **(defaults or {}), **context,
                 "now": now, "relative": lambda when: Markup(format_relative(when, now))}
    body = environment(directory).get_template(template).render(variables)
    return body.strip() + "\n"


def render(template: str, now: datetime, directory: str | None = None, **context: Any) -> str:
    """Render ``templates/<template>`` with ``now`` and the ``relative`` filter bound to it."""
    return _render(template, now, directory, context)


def render_post(draft: PostDraft, now: datetime, game_id: str | None = None,
                detail: str | None = None) -> str:
    """Render a post draft's body, in ``detail`` (else the post's under the policy in force,
    :func:`dealer.detail.detail_for`): a brief post is its template's brief version
    (:func:`brief_template`), the template itself when it has none."""
    detail = detail or detail_for(draft.channel, draft.recipient)
    template = brief_template(draft.template) if detail == BRIEF else draft.template
    return _render(template, now, None, draft.context,
                   {"game_id": game_id, "detail": detail, "game_page": _game_page(game_id),
                    "fairness_short": fairness_short()})


def fairness_short() -> Markup:
    """Where the fairness check is, in a brief post's few words: the link, or the host."""
    return Markup(_fairness_url or "the host sends the script (`dealer fairness-script`)")


def _game_page(game_id: str | None) -> Markup:
    # The host's own address (validated as http(s)) and a quoted game id: it links as it is.
    return Markup(post_detail().game_page(game_id))


def brief_template(template: str) -> str:
    """The brief version of ``template`` (``roulette/round_result.txt`` has
    ``roulette/round_result.brief.txt`` beside it), or ``template`` itself when it has none."""
    return template_variant(template, "brief") or template


def template_variant(template: str, variant: str | None) -> str | None:
    """``template``'s ``variant`` beside it (``brief``: ``roulette/round_result.brief.txt``;
    None: the template itself), or None when there is no such template."""
    key = (template, variant)
    try:
        return _VARIANTS[key]
    except KeyError:
        stem, dot, suffix = template.rpartition(".")
        name = template if variant is None else f"{stem}.{variant}.{suffix}" if dot else f"{template}.{variant}"
        exists = name in environment().list_templates() if _EXTRA_DIRS else (templates_dir() / name).is_file()
        _VARIANTS[key] = found = name if exists else None
        return found


_VARIANTS: dict[tuple[str, str | None], str | None] = {}
"""Each template's variants found so far: templates never change while dealer runs."""
