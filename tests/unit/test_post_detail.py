"""Post detail (dealer/detail.py): the setting, a route's own ``|detail=``, the status page's
address, and the brief version of a template chosen when a post is brief."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from dealer.detail import BRIEF, FULL, PostDetail, detail_for, from_settings, set_post_detail
from dealer.games.base import PostDraft
from dealer.render import brief_template, render_post, template_variant
from dealer.routes import BadRoute, parse_destination, parse_routes, post_detail_policy
from dealer.settings import Settings

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def test_a_route_names_its_detail_after_its_format_or_alone() -> None:
    assert parse_destination("dir:var/forum|bbcode|detail=full").detail == FULL
    assert parse_destination("dir:var/forum|detail=full|bbcode").format == "bbcode"
    only = parse_destination("dir:var/forum| Detail = Brief ")
    assert (only.format, only.detail) == ("markdown", BRIEF)
    assert parse_destination("dir:var/forum|bbcode").detail is None
    assert str(parse_destination("dir:var/forum|bbcode|detail=full")) == "dir:var/forum|bbcode|detail=full"
    assert str(parse_destination("stdout|detail=brief")) == "stdout|detail=brief"


@pytest.mark.parametrize("text, why", [
    ("dir:x|detail=short", "detail=brief or detail=full"),
    ("dir:x|detail=full|detail=brief", "detail=brief or detail=full (once)"),
    ("dir:x|colour=red", "a route's option is detail=brief or detail=full"),
    ("dir:x|bbcode|plain", "two formats"),
])
def test_a_bad_route_option_is_refused_saying_why(text: str, why: str) -> None:
    with pytest.raises(BadRoute, match=why.replace("(", r"\(").replace(")", r"\)")):
        parse_destination(text)


def test_each_post_takes_its_routes_detail_else_the_setting() -> None:
    table = parse_routes("#forum=dir:f|bbcode|detail=full;pm=stdout|detail=brief;#chat=stdout", "dir:out")
    assert table.details() == {"#forum": FULL, "pm": BRIEF, "#chat": None, "*": None}
    policy = from_settings(FULL, table.details(), "")
    assert policy.for_post("#forum", None) == FULL
    assert policy.for_post("#chat", None) == FULL  # no detail of its own: the setting's
    assert policy.for_post("#forum", "alice") == BRIEF  # a private post takes the pm route's
    default_full = post_detail_policy(BRIEF, "*=dir:out|detail=full", "dir:out", "")
    assert default_full.for_post("#chat", None) == FULL  # the default route's own
    assert default_full.for_post("#chat", "alice") == FULL
    # Routes that do not parse give no detail here (the daemon and `dealer routes` report them).
    assert post_detail_policy(FULL, "#x=nowhere", "dir:out", "").routes == {}


def test_the_game_page_is_linked_only_with_an_address() -> None:
    assert PostDetail().game_page("r1") == ""
    linked = PostDetail(web_url="https://casino.example.org/")
    assert linked.game_page("r1") == "https://casino.example.org/games/r1"
    assert linked.game_page("a b/c#d") == "https://casino.example.org/games/a%20b%2Fc%23d"
    assert linked.game_page(None) == ""


def test_the_settings_default_to_brief_and_check_their_values(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("DEALER_POST_DETAIL", raising=False)
    settings = Settings(_env_file=None)
    assert (settings.post_detail, settings.web_url) == (BRIEF, "")
    with pytest.raises(ValidationError):
        Settings(_env_file=None, post_detail="short")
    with pytest.raises(ValidationError):
        Settings(_env_file=None, web_url="casino.example.org")
    assert Settings(_env_file=None, web_url=" https://c.example/ ").web_url == "https://c.example/"


def test_a_template_has_a_brief_version_beside_it_or_is_its_own() -> None:
    assert brief_template("roulette/round_result.txt") == "roulette/round_result.brief.txt"
    assert brief_template("roulette/forfeit.txt") == "roulette/forfeit.txt"
    assert template_variant("roulette/confirmation.txt", "footer") == "roulette/confirmation.footer.txt"
    assert template_variant("roulette/forfeit.txt", "footer") is None
    assert template_variant("roulette/explain.txt", None) == "roulette/explain.txt"
    assert template_variant("exoptosis/explain.txt", None) is None


def test_render_post_renders_the_detail_of_the_post() -> None:
    draft = PostDraft("forfeit", "roulette/forfeit.txt", "#r", None, "s",
                      {"game": "r1", "player": "bob", "opponent": "alice", "losses": 100, "cap": 100,
                       "round": 3})
    full = render_post(draft, NOW, "r1", detail=FULL)
    assert render_post(draft, NOW, "r1", detail=BRIEF) == full  # no brief version: the same
    set_post_detail(PostDetail(default=BRIEF, routes={"#r": FULL}))
    assert detail_for("#r", None) == FULL and detail_for("#other", None) == BRIEF
