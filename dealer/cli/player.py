"""`dealer player` (add, link, unlink, show) and `dealer grant`."""

from __future__ import annotations

import click

from dealer.cli.common import _admin, _json
from dealer.clock import utcnow
from dealer.text import plural


@click.group()
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


@player.command("passphrase")
@click.argument("name")
def player_passphrase(name: str) -> None:
    """Print a new random pass phrase for player NAME, replacing any before it.

    Give it to the player privately: a mail whose first line is `passphrase` and the phrase
    counts as NAME's even where the mail cannot be authenticated. Only its hash is kept:
    it cannot be shown again."""
    from dealer.shell.senders import new_passphrase_for

    shown, phrase = _admin(lambda s: new_passphrase_for(s, name, utcnow()))
    click.echo(f"new pass phrase of {shown} (shown once): {phrase}")


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


@click.command()
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
