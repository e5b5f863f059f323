"""Routes (dealer/routes.py): parsing DEALER_ROUTES, a post's destination, the checks."""

from __future__ import annotations

import pytest

from dealer.routes import ACCOUNT, BadRoute, Destination, parse_destination, parse_routes

TABLE = "#the-raceway=discord:channel/123456789012345678; pm=discord:dm\n#forum=dir:var/forum|bbcode"


def test_a_table_with_the_default_from_publish() -> None:
    table = parse_routes(TABLE, "dir:/srv/outbox")
    assert table.for_channel("#the-raceway") == Destination("discord", "channel/123456789012345678", "discord")
    assert table.for_channel("#forum") == Destination("dir", "var/forum", "bbcode")
    assert table.for_channel("#elsewhere") == Destination("dir", "/srv/outbox", "markdown")
    assert table.discord_channels() == {123456789012345678: "#the-raceway"}
    assert table.channel_of("discord", "channel/123456789012345678") == "#the-raceway"
    assert table.channel_of("discord", "channel/1") is None
    assert table.lines() == [
        "#forum        ->  dir:var/forum|bbcode",
        "#the-raceway  ->  discord:channel/123456789012345678",
        "pm            ->  discord:dm",
        "*             ->  dir:/srv/outbox",
    ]


def test_the_star_route_replaces_the_default() -> None:
    table = parse_routes("*=stdout", "dir:/srv/outbox")
    assert table.default == Destination("stdout", "", "plain")
    assert table.routes == {}


def test_a_private_post_takes_pm_unless_the_player_has_no_account_there() -> None:
    table = parse_routes(TABLE, "dir:/srv/outbox")
    dm = Destination("discord", "dm", "discord")
    assert table.for_post("pm", "Alice", {"discord": "80351110224678912"}) == dm
    assert table.for_post("pm", "Bob", {}) == table.default
    # An account recipient (an unlinked sender) goes to that platform's DMs.
    assert table.for_post("pm", "discord:80351110224678912", {}) == dm
    assert table.for_post("#the-raceway", None, {}).kind == "discord"


@pytest.mark.parametrize("text, why", [
    ("#a", "CHANNEL=DESTINATION"),
    ("#a=", "CHANNEL=DESTINATION"),
    ("#a=ftp:x", "unknown destination"),
    ("#a=discord:channel/abc", "numeric id"),
    ("#a=discord:42", "discord:channel/ID"),
    ("#a=email:not-an-address", "an e-mail destination is email, or email:LIST_ADDRESS"),
    ("#a=discourse:forum", "a Discourse destination is discourse, discourse:topic/ID or discourse:pm"),
    ("#a=dir:", "names its folder"),
    ("#a=stdout:x", "takes no argument"),
    ("#a=dir:x|html", "unknown format"),
    ("#a=discord:dm|plain", "its own format"),
    ("#a=stdout;#a=stdout", "routed twice"),
])
def test_bad_routes_say_what_is_wrong(text: str, why: str) -> None:
    with pytest.raises(BadRoute, match=why):
        parse_routes(text, "dir:/srv/outbox")


def test_problems_of_a_table() -> None:
    table = parse_routes("#a=discord:dm;pm=discord:webhook;#b=discord:channel/5;#c=discord:channel/5", "stdout")
    problems = table.problems(discord_token=False, webhook_url=False)
    assert "#a: discord:dm serves only the pm route" in problems
    assert "pm: a webhook can only post in its own channel, never a direct message" in problems
    assert "#b: discord:channel/5 needs DEALER_DISCORD_TOKEN (the bot's token)" in problems
    assert "pm: discord:webhook needs DEALER_DISCORD_WEBHOOK_URL" in problems
    assert any("one Discord channel (5) serves several game channels" in p for p in problems)
    assert parse_routes(TABLE, "stdout").problems(discord_token=True, webhook_url=False) == []


def test_destinations_print_their_format_only_when_not_the_default() -> None:
    assert str(parse_destination("dir:x")) == "dir:x"
    assert str(parse_destination("dir:x|plain")) == "dir:x|plain"
    assert parse_destination("DISCORD:channel/7").transport == "discord"
    assert parse_destination("dir:a").transport == "dir:a"


def test_email_and_discourse_destinations() -> None:
    table = parse_routes("pm=email; #tally=email:tally@lists.example; #hall=discourse:topic/42",
                         "dir:/srv/outbox")
    assert table.for_channel("#tally") == Destination("email", "tally@lists.example", "plain")
    assert table.for_channel("#hall") == Destination("discourse", "topic/42", "markdown")
    assert table.for_post("pm", "alice", {"email": "alice@example.org"}) == Destination("email", "", "plain")
    # A player with no linked address goes by the default route (docs/EMAIL.md), as on Discord:
    # mail could reach only someone whose address dealer knows (the post was parked).
    assert table.for_post("pm", "bob", {}) == table.default
    assert table.for_post("pm", "bob", {"discord": "80351110224678912"}) == table.default


def test_the_pm_route_may_name_a_destination_per_platform() -> None:
    """pm=discord:dm,email: each player's private posts where they have an account, Discord
    first; a player with neither by the default route; both checked and printed."""
    table = parse_routes("#the-raceway=discord:channel/1; pm=discord:dm, email; *=dir:/srv/outbox",
                         "stdout")
    dm, mail = Destination("discord", "dm", "discord"), Destination("email", "", "plain")
    assert table.for_post("pm", "ann", {"discord": "80351110224678912"}) == dm
    assert table.for_post("pm", "bob", {"email": "bob@example.org"}) == mail
    assert table.for_post("pm", "cy", {"email": "cy@example.org", "discord": "80351110224678913"}) == dm
    assert table.for_post("pm", "dee", {}) == Destination("dir", "/srv/outbox", "markdown")
    assert table.for_post("pm", "email:eve@example.org", {}) == Destination("email", "dm", "plain")
    assert table.uses("email") and not parse_routes("pm=discord:dm", "stdout").uses("email")
    assert "pm            ->  discord:dm, email" in table.lines()
    assert table.problems(discord_token=True, webhook_url=False, smtp_server=False) == [
        "pm: email needs DEALER_SMTP_SERVER (and DEALER_EMAIL_FROM)"]
    assert parse_routes("pm=email,discord:dm", "stdout").problems(discord_token=True, webhook_url=False) == [
        "pm: discord:dm comes first of the pm route's destinations"]
    with pytest.raises(BadRoute, match="pm: 'email:x': an e-mail destination"):
        parse_routes("pm=discord:dm,email:x", "stdout")
    with pytest.raises(BadRoute, match="unknown destination"):  # only pm lists destinations
        parse_routes("#a=stdout,email", "stdout")


def test_email_and_discourse_routes_need_their_servers() -> None:
    table = parse_routes("pm=email; #hall=discourse:topic/42", "dir:/srv/outbox")
    assert table.problems(discord_token=False, webhook_url=False) == []
    assert table.problems(discord_token=False, webhook_url=False, smtp_server=False,
                          discourse_url=False) == [
        "#hall: discourse:topic/42 needs DEALER_DISCOURSE_URL (and its API key)",
        "pm: email needs DEALER_SMTP_SERVER (and DEALER_EMAIL_FROM)",
    ]


@pytest.mark.parametrize("text, parts", [
    ("discord:80351110224678912", ("discord", "80351110224678912")),
    ("email:alice@example.org", ("email", "alice@example.org")),
    ("discourse:thunder_bob", ("discourse", "thunder_bob")),
    ("discourse:Anna.K-2", ("discourse", "Anna.K-2")),
    ("discord:thunder_bob", None),  # a Discord account is its numeric id, never a name
    ("discourse:two words", None),
    ("Thunder Bob", None),
])
def test_what_reads_as_a_platform_account(text: str, parts: tuple[str, str] | None) -> None:
    found = ACCOUNT.match(text)
    assert (found and (found.group("platform"), found.group("id"))) == (parts or None)
