"""Posts rendered from the Jinja templates under ``templates/``, through Jinja's public API.

Every ``{{ value }}`` is escaped by :func:`dealer.text.escape_post` unless it is a number or
a filter's ``Markup``, so player text never carries markup or mentions into a post.
Filters: ``utc``, ``iso``, ``signed``, ``plural``, ``duration``, ``short`` (a hash's first
12 hex digits), ``code`` (player text inside a code span) and ``trusted``; globals: ``relative(when)``, ``fairness_check``.
"""

from __future__ import annotations

import logging
from datetime import datetime
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, MutableMapping
from zoneinfo import ZoneInfo

from jinja2 import ChoiceLoader, Environment, FileSystemBytecodeCache, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from dealer.clock import format_duration, format_relative, format_utc, format_utc_and_local, iso, local_zone
from dealer.detail import BRIEF, detail_for, post_detail
from dealer.formats import WORD_JOINER
from dealer.games.base import PostDraft
from dealer.text import escape_post, plural

_MARKER = Path("common") / "error.txt"


class TemplatesMissing(RuntimeError):
    """dealer's own templates are not installed with the package."""


def templates_dir() -> Path:
    """dealer's templates: in the wheel, else the repository's ``templates/``; never the cwd."""
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
    """Where posts send players for the fairness check (``DEALER_FAIRNESS_URL``; None: the host)."""
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


def fairness_check() -> Markup:
    """The words that tell a player where the fairness check is: a link, or the host."""
    return _fairness_words


def add_template_dir(directory: str | Path) -> None:
    """Also look for templates in ``directory`` (for rulesets that live outside dealer)."""
    if str(directory) not in _EXTRA_DIRS:
        _EXTRA_DIRS.append(str(directory))
        environment.cache_clear()
        template_variant.cache_clear()


_ESCAPED: dict[str, str] = {}
"""Short player texts escaped, by the text: a post prints the same names again and again
(23 % of a round result's rendering, HOT_PATH.md). Exact ``str`` only; bounded."""
_ESCAPED_MAX = 4096
_ESCAPED_CHARS = 200


def _finalize(value: Any) -> Any:
    """What ``{{ value }}`` prints: player text escaped; a number or ``Markup`` as it is."""
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
    """Jinja's environment, reading ``value.name`` of a plain dict as its key first (the
    posts' contexts are dicts: 45 % of a round result's rendering, HOT_PATH.md); a dict's
    own attributes (``items``, ``get``) are still found as Jinja finds them."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)

    def make_globals(self, d: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
        """The globals as a plain dict, not a ``ChainMap``: every render copies them (11 %)."""
        return {**self.globals, **(d or {})}


_zone: ZoneInfo | None = None


def set_timezone(name: str) -> None:
    """Show every absolute time in the zone ``name`` too (``DEALER_TIMEZONE``; ValueError if unknown)."""
    global _zone
    _zone = local_zone(name)


def _utc(value: datetime) -> Markup:
    # The Discord format turns this into a timestamp tag (dealer.formats).
    return Markup(format_utc_and_local(value, _zone) if _zone is not None else format_utc(value))


def _signed(value: int) -> Markup:
    return Markup(f"{value:+d}")


@lru_cache(maxsize=4096)
def _plural_words(count: int, singular: str, plural_form: str | None) -> Markup:
    # The standings print two per player in every result (11 % of its rendering).
    return Markup(escape_post(plural(count, singular, plural_form)))


def _plural(count: int, singular: str, plural_form: str | None = None) -> Markup:
    return _plural_words(int(count), singular, plural_form)


def _short(value: str) -> Markup:
    text = str(value)
    if len(text) <= SHORT_HASH or text.strip("0123456789abcdef"):  # not all hex digits
        return Markup(escape_post(text))
    return Markup(text[:SHORT_HASH] + "…")


def _code(value: Any) -> Markup:
    """Player text inside a code span, which shows a backslash as it is: no markdown escape,
    but on one line, a backtick cannot close the span (it becomes U+02CB ˋ), ``@`` mentions
    nobody (a word joiner follows it) and ``[`` opens no BBCode tag (dealer.formats)."""
    text = " ".join(str(value).split())
    return Markup(text.replace("`", "\u02cb").replace("@", "@" + WORD_JOINER))


class _BytecodeCache(FileSystemBytecodeCache):
    """Jinja's cache of compiled templates in a folder, where a file it cannot read (cut
    short by a disk, not by a kill: each is written aside and renamed) means compiling the
    template again, not failing every post made from it."""

    def load_bytecode(self, bucket: Any) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:
            bucket.reset()


_bytecode_cache: FileSystemBytecodeCache | None = None


def use_bytecode_cache(folder: Path | None) -> None:
    """Keep the templates' compiled code in ``folder`` (``dealer run``: ``DEALER_HOME/cache/
    templates``), so that a restarted daemon loads each template's code instead of compiling
    it again (Jinja's ``FileSystemBytecodeCache``: a file is written under a temporary name
    and renamed, and one whose template changed is compiled again). The temporary files of
    a process killed while writing one are removed here. A folder that cannot be made
    leaves the cache off (logged)."""
    global _bytecode_cache
    _bytecode_cache = None
    if folder is not None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for orphan in folder.glob("*.tmp"):
                orphan.unlink(missing_ok=True)
            _bytecode_cache = _BytecodeCache(str(folder))
        except OSError as exc:
            logging.getLogger(__name__).warning("templates compiled at every start: %s", exc)
    environment.cache_clear()


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
        bytecode_cache=_bytecode_cache,
    )
    env.filters["utc"] = _utc
    env.filters["iso"] = lambda v: Markup(iso(v))
    env.filters["signed"] = _signed
    env.filters["plural"] = _plural
    env.filters["duration"] = lambda v: Markup(format_duration(v))
    env.filters["short"] = _short
    env.filters["code"] = _code
    env.filters["trusted"] = Markup  # for dealer's own fixed strings (channel names, ids)
    return env


def _render(template: str, now: datetime, directory: str | None, context: dict[str, Any],
            defaults: dict[str, Any] | None = None) -> str:
    """``templates/<template>`` rendered over ``defaults`` and ``context``; one final newline."""
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
    """A post draft's body in ``detail`` (default: its destination's), brief from its brief template."""
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
    """``roulette/round_result.brief.txt`` for ``roulette/round_result.txt``, if it exists."""
    return template_variant(template, "brief") or template


@cache
def template_variant(template: str, variant: str | None) -> str | None:
    """``template``'s ``variant`` (``brief``: ``x.brief.txt``; None: itself), if it exists."""
    stem, dot, suffix = template.rpartition(".")
    name = template if variant is None else f"{stem}.{variant}.{suffix}" if dot else f"{template}.{variant}"
    exists = name in environment().list_templates() if _EXTRA_DIRS else (templates_dir() / name).is_file()
    return name if exists else None
