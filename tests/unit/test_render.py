"""Rendering: the filters every template shares, and wording no post may carry."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest

from dealer.render import environment, render, set_fairness_url

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
NOUNS = "chips|points|rounds|cards|vertebrae|horses|actions|draws|times|days|hours|minutes|seconds"


@pytest.fixture
def fairness_url():
    """Set DEALER_FAIRNESS_URL's value for the test, and clear it afterwards."""
    yield set_fairness_url
    set_fairness_url(None)


def one_off(source: str, **context) -> str:
    return environment().from_string(source).render(**context)


def test_filters() -> None:
    assert one_off('{{ n|plural("chip") }}', n=1) == "1 chip"
    assert one_off('{{ n|plural("chip") }}', n=0) == "0 chips"
    assert one_off('{{ n|plural("vertebra", "vertebrae") }}', n=5) == "5 vertebrae"
    assert one_off("{{ d|duration }}", d=timedelta(hours=24)) == "1 day"
    assert one_off("{{ h|short }}", h="ab" * 32) == "abababababab…"
    # Only a hex hash is shortened; anything else is printed whole, escaped.
    assert one_off("{{ h|short }}", h="not_a_hash") == "not\\_a\\_hash"
    assert one_off("{{ h|short }}", h="ab" * 31 + "aG") == "ab" * 31 + "aG"
    assert one_off("{{ h|short }}", h="Ab" * 32) == "Ab" * 32  # upper case: no hash of ours


def test_no_template_prints_a_count_before_a_fixed_plural() -> None:
    counted = re.compile(r"\}\}\s+(" + NOUNS + r")\b")
    for path in TEMPLATES.rglob("*.txt"):
        text = path.read_text(encoding="utf-8")
        assert not counted.search(text), (path.name, counted.search(text))


def test_no_post_points_at_a_path_in_the_repository() -> None:
    for path in TEMPLATES.rglob("*.txt"):
        assert "docs/" not in path.read_text(encoding="utf-8"), path.name


def test_posts_say_the_host_has_the_check_without_a_url() -> None:
    body = render("common/help.txt", NOW, game_id=None, games=[], commands=[], title="")
    assert ("provably fair; how to check: the host has the procedure and its script and can "
            "send them to you (the host prints the script with `dealer fairness-script`))") in body


def test_posts_link_the_fairness_url_unescaped(fairness_url) -> None:
    fairness_url("https://casino.example.org/fair_play/FAIRNESS.md")
    body = render("common/help.txt", NOW, game_id=None, games=[], commands=[], title="")
    assert ("how to check: the procedure and its script are at "
            "https://casino.example.org/fair_play/FAIRNESS.md)") in body


def test_hall_counts_of_one_are_singular() -> None:
    joined = render("hall/joined.txt", NOW, name="alice", phase=1, phase_ends_at=NOW,
                    members=["alice"], chips=1, vertebrae=1, card_total=1, packs=[], starting=[])
    assert "You hold 1 chip, 1 vertebra, 1 card." in joined
    bought = render("hall/bought.txt", NOW, what="a Handy Pack", cost=12, cards=[],
                    holo_percent=10, chips=1, vertebrae=0)
    assert "for 12 vertebrae (GH-5)" in bought and "You now hold 1 chip and 0 vertebrae." in bought
    happenings = render(
        "hall/_happenings.txt", NOW, expired=[],
        happenings=[
            SimpleNamespace(kind="gift", actor="alice", other="bob", what="GH-7",
                            items=["7 of Hearts"], first_draw=4, next_draw=6, client_seeds=1),
            SimpleNamespace(kind="bought", actor="bob", what="a random card", cost=5,
                            items=["Ace of Spades"], first_draw=6, next_draw=7, client_seeds=2),
        ],
    )
    assert ("alice gifted bob: 1 card (GH-7): 7 of Hearts (GH-7; draws 4 to 5 with the "
            "first client seed).") in happenings
    assert ("bob bought a random card for 5 vertebrae: Ace of Spades (GH-5; draw 6 with the "
            "first 2 client seeds).") in happenings


def test_the_fairness_url_must_be_a_web_address() -> None:
    from pydantic import ValidationError

    from dealer.settings import Settings

    assert Settings(_env_file=None, fairness_url=" https://x.example/f ").fairness_url == "https://x.example/f"
    assert Settings(_env_file=None).fairness_url == ""
    for bad in ("docs/FAIRNESS.md", "https://x.example/a b", "javascript:alert(1)", "https://x/<b>"):
        with pytest.raises(ValidationError):
            Settings(_env_file=None, fairness_url=bad)


def test_hall_help_counts_one_vertebra() -> None:
    from dealer.games.hall.croupier import croupier_lines

    assert croupier_lines(1) == [
        "(with 1 vertebra you cannot buy: random card (5), handy pack (12), deck pack (18), "
        "legendary pack (50), chip (25))"]
    granted = render("hall/granted.txt", NOW, what="1 chip", chips=1, vertebrae=1)
    assert "You now hold 1 chip and 1 vertebra here" in granted


# -- dealer's environment prints what stock Jinja prints with the plain escaping rule ------

from hypothesis import given, settings, strategies as st  # noqa: E402
from jinja2 import Environment  # noqa: E402
from markupsafe import Markup  # noqa: E402

from dealer import render as render_module  # noqa: E402
from dealer.text import escape_post  # noqa: E402

PRINTS = (
    "{{ a }}|{{ d.name }}|{{ d.items }}|{{ d.missing_key is defined }}|{{ d.get('name') }}|{{ o.name }}|{{ d.inner.name }}|"
    "{{ n }}|{{ m }}|{{ n|plural('chip') }}|{{ h|short }}|{% for x in xs %}{{ x }},{% endfor %}|"
    "{% set s %}{{ a }}{{ n }}{% endset %}{{ s }}|{% macro q(v) %}[{{ v }}]{% endmacro %}{{ q(a) }}|"
    "{{ a if n else m }}|{{ a ~ m }}|{{ fairness_check }}"
)


def _escaped(value):  # type: ignore[no-untyped-def]
    """The rule every printed value follows, written plainly (no cache): player text and
    anything unknown escaped, numbers and dealer's own Markup as they are, None as nothing."""
    if isinstance(value, (Markup, int, float)):
        return value
    return "" if value is None else escape_post(value)


def _stock() -> Environment:
    """Jinja's own Environment (its getattr, its globals), with the plain rule."""
    env = render_module.environment()
    stock = Environment(undefined=env.undefined, finalize=_escaped, trim_blocks=True, lstrip_blocks=True,
                        autoescape=False)
    stock.filters.update(env.filters)
    stock.globals["fairness_check"] = render_module.fairness_check()
    return stock


_TEXT = st.text(alphabet=st.sampled_from(list("ab @#-+=1.\\`*_~|[]<>\n ")) | st.characters(), max_size=30)
_VALUE = _TEXT | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False) | _TEXT.map(Markup)


@settings(max_examples=300, deadline=None)
@given(a=_VALUE, name=_VALUE, n=st.integers(-3, 3), m=_VALUE, h=_TEXT, xs=st.lists(_VALUE, max_size=4))
def test_templates_print_what_stock_jinja_prints(a, name, n, m, h, xs) -> None:  # type: ignore[no-untyped-def]
    context = dict(a=a, d={"name": name, "inner": {"name": a}, "items": "shadowed"}, o=SimpleNamespace(name=name),
                   n=n, m=m, h=h, xs=xs)
    ours = render_module.environment().from_string(PRINTS)
    theirs = _stock().from_string(PRINTS)
    for _ in range(2):  # the second time from the escaped-text cache
        assert ours.render(**context, fairness_check=render_module.fairness_check()) == theirs.render(**context)


def test_every_template_compiles() -> None:
    env = render_module.environment()
    names = [p.relative_to(TEMPLATES).as_posix() for p in TEMPLATES.rglob("*.txt")]
    assert len(names) > 90
    for name in names:
        env.get_template(name)


def test_the_escape_cache_never_escapes_markup_equal_to_cached_text() -> None:
    text = "**@everyone** - <b>"
    assert one_off("{{ t }}", t=text) == escape_post(text)
    assert render_module._ESCAPED[text] == escape_post(text)
    # A template's own safe text equal to a cached player text prints unescaped.
    assert one_off("{{ t }}", t=Markup(text)) == text
    assert one_off("{{ t }}", t=text) == escape_post(text)


def test_the_escape_cache_is_bounded(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(render_module, "_ESCAPED_MAX", 8)
    for i in range(30):
        assert one_off("{{ t }}", t=f"name_{i}") == f"name\\_{i}"
        assert len(render_module._ESCAPED) <= 8
    long = "x*" * render_module._ESCAPED_CHARS
    assert one_off("{{ t }}", t=long) == escape_post(long)
    assert long not in render_module._ESCAPED


def test_a_missing_key_is_an_error_as_in_jinjas_own_code() -> None:
    from jinja2 import UndefinedError

    for env in (render_module.environment(), _stock()):
        with pytest.raises(UndefinedError, match="has no attribute 'missing'"):
            env.from_string("{{ d.missing }}").render(d={"name": "x"})


def test_a_context_cannot_set_now_or_relative() -> None:
    with pytest.raises(TypeError):
        render("common/failed.txt", NOW, line="x", relative=None)


def test_compiled_templates_are_kept_for_the_next_start_and_orphans_removed(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from jinja2 import Environment

    from dealer.render import use_bytecode_cache

    folder = tmp_path / "cache" / "templates"
    folder.mkdir(parents=True)
    orphan = folder / "__jinja2_0123.cache1a2b3c.tmp"  # a process killed while writing one
    orphan.write_bytes(b"half a file")
    try:
        use_bytecode_cache(folder)
        assert not orphan.exists()
        first = render("common/error.txt", NOW, game_id=None, what="it broke", rule=None, allowed=[])
        cached = list(folder.glob("*.cache"))
        assert len(cached) == 1 and not list(folder.glob("*.tmp"))
        # The next start loads the template's code from the folder: nothing is compiled.
        use_bytecode_cache(folder)

        def compile_again(*args, **kwargs):  # type: ignore[no-untyped-def]
            raise AssertionError("compiled again")

        monkeypatch.setattr(Environment, "compile", compile_again)
        assert render("common/error.txt", NOW, game_id=None, what="it broke", rule=None, allowed=[]) == first
        # A cache file cut short (a crash before the rename cannot do it; a disk can) is
        # compiled again, not an error.
        monkeypatch.undo()
        cached[0].write_bytes(cached[0].read_bytes()[:20])
        use_bytecode_cache(folder)
        assert render("common/error.txt", NOW, game_id=None, what="it broke", rule=None, allowed=[]) == first
    finally:
        use_bytecode_cache(None)


# -- the code filter: player text inside a code span ------------------------------------------

from dealer.formats import FORMATS, WORD_JOINER, render_for  # noqa: E402

IN_CODE = "Send `offer ... to {{ name|code }} for ...` now."


def _span(body: str, fmt: str) -> str:
    """What a post in ``fmt`` shows inside its one code span."""
    opener, closer = ("[font=monospace]", "[/font]") if fmt == "bbcode" else ("`", "`")
    start = body.index(opener) + len(opener)
    return body[start:body.index(" for ...", start)]


@pytest.mark.parametrize("fmt", FORMATS)
def test_code_keeps_markup_as_typed_and_escapes_nothing(fmt: str) -> None:
    body = render_for(fmt, one_off(IN_CODE, name="s_m_i_th *star* ~x~ |y| \\z <w>"))
    assert _span(body, fmt) == "offer ... to s_m_i_th *star* ~x~ |y| \\z <w>"
    assert "\\_" not in body and "\\*" not in body  # a code span would show the backslashes
    assert body.endswith(" for ...` now.") or body.endswith(" for ...[/font] now.")


@pytest.mark.parametrize("fmt", FORMATS)
def test_code_cannot_close_its_span_nor_mention(fmt: str) -> None:
    body = render_for(fmt, one_off(IN_CODE, name="a`b @everyone <@123>\nnext line"))
    shown = _span(body, fmt)
    assert "`" not in shown and "a\u02cbb" in shown  # the backtick is drawn, closing nothing
    assert f"@{WORD_JOINER}everyone" in shown and f"<@{WORD_JOINER}123>" in shown
    assert "\n" not in shown and "next line" in shown  # a code span is one line
    assert body.count("`") == (0 if fmt == "bbcode" else 2)


@pytest.mark.parametrize("name", ["[/font][url=https://evil.example]x[/url]", "\\[/font]", "x\\"])
def test_code_opens_no_bbcode_tag_and_a_last_backslash_closes_nothing(name: str) -> None:
    body = render_for("bbcode", one_off(IN_CODE, name=name))
    assert body.count("[font=monospace]") == 1 and body.endswith(" for ...[/font] now.")
    shown = _span(body, "bbcode")
    assert shown.replace("[" + WORD_JOINER, "").count("[") == 0  # every "[" inert
    assert shown.replace(WORD_JOINER, "") == "offer ... to " + name
    for fmt in ("markdown", "discord", "plain"):
        assert _span(render_for(fmt, one_off(IN_CODE, name=name)), fmt) == "offer ... to " + name


def test_a_failed_trade_names_its_target_in_code_as_typed() -> None:
    body = render("hall/trade_failed.txt", NOW, offer=3, offerer="alice", target="mr_x*",
                  gives=["7H"], wants=[], reader="alice", why="alice no longer holds 7H")
    assert "`offer ... to mr_x* for ...`" in body  # in code: no escape
    assert "alice gives 7H to mr\\_x\\* for nothing" in body  # in prose: escaped
