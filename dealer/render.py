"""Rendering posts from the Jinja templates under ``templates/``.

Every ``{{ value }}`` a template prints is escaped by :func:`dealer.text.escape_post`
unless it is a number or was marked safe by one of dealer's own filters, so player text
can never carry markup or mentions into a post.

Filters every template may use: ``utc`` and ``iso`` (absolute times), ``signed``
(``+3``), ``plural`` (``{{ n|plural("chip") }}`` is ``1 chip`` / ``2 chips``; see
:func:`dealer.text.plural`), ``duration`` (a timedelta as
:func:`dealer.clock.format_duration` writes it), ``short`` (a 64-hex hash cut to its first
12 hex digits, for posts that list many) and ``trusted``. Every template also sees
``relative(when)`` (``in 23 h 59 min``) and ``fairness_check``, where players find the
fairness check (the host's ``DEALER_FAIRNESS_URL``, or the host itself).

The templates are found from the package, never from the current directory: see
:func:`templates_dir`.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, MutableMapping

from jinja2 import ChoiceLoader, Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from dealer.clock import format_duration, format_relative, format_utc, iso
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
    global _fairness_url
    _fairness_url = url or None


def fairness_check() -> Markup:
    """The words that tell a player where the fairness check is: a link, or the host."""
    if _fairness_url:
        # The host's own setting, validated as an http(s) URL: left unescaped so it links.
        return Markup(f"the procedure and its script are at {_fairness_url}")
    return Markup(
        "the host has the procedure and its script and can send them to you "
        "(the host prints the script with `dealer fairness-script`)"
    )


def add_template_dir(directory: str | Path) -> None:
    """Also look for templates in ``directory`` (for rulesets that live outside dealer)."""
    if str(directory) not in _EXTRA_DIRS:
        _EXTRA_DIRS.append(str(directory))
        environment.cache_clear()


def _finalize(value: Any) -> Any:
    if type(value) is str:  # the common case first (a Markup is a str, but not of this type)
        return escape_post(value)
    if isinstance(value, Markup) or isinstance(value, (int, float)) or value is None:
        return "" if value is None else value
    return escape_post(value)


_DICT_ATTRIBUTES = frozenset(dir(dict))


class _Environment(Environment):
    """Jinja's environment, with ``value.name`` looked up first as a key in a plain dict.

    The posts' contexts are dicts, and Jinja tries an attribute first: for ``r.preparer``
    it raises and catches an AttributeError before reading the key, dozens of times per
    post. A name a dict has as an attribute (``items``, ``get``) still finds the attribute,
    so every template reads exactly what it read before."""

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
        set, which a ``ChainMap`` does key by key in Python (a sixth of the rendering).
        Nothing changes the globals once the environment is made."""
        return {**self.globals, **(d or {})}


def _utc(value: datetime) -> Markup:
    return Markup(format_utc(value))


def _signed(value: int) -> Markup:
    return Markup(f"{value:+d}")


def _plural(count: int, singular: str, plural_form: str | None = None) -> Markup:
    # The count is a number and the words come from the template itself.
    return Markup(escape_post(plural(int(count), singular, plural_form)))


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


def render(template: str, now: datetime, directory: str | None = None, **context: Any) -> str:
    """Render ``templates/<template>`` with ``now`` and the ``relative`` filter bound to it."""
    env = environment(directory)
    tmpl = env.get_template(template)
    relative = lambda when: Markup(format_relative(when, now))  # noqa: E731
    context.setdefault("fairness_check", fairness_check())
    return tmpl.render(now=now, relative=relative, **context).strip() + "\n"


def render_post(draft: PostDraft, now: datetime, game_id: str | None = None) -> str:
    """Render a post draft's body."""
    context = {"game_id": game_id, **draft.context}
    return render(draft.template, now, **context)
