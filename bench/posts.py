"""How long dealer's posts and replies are, in brief and full detail, game by game.

    python bench/posts.py [--detail brief|full|both] [--json]

Plays four scripted games through the real daemon pass (store, inbox, rules, templates,
outbox) on a throw-away SQLite file, with the clock jumping from one moment to the next:
the ``dealer demo`` roulette (10 rounds), a races table run to the end, a Hall cycle over
three phases, an Exoptosis duel of that Hall (a hand corrected in a two-command PM), and
the Hall's government over a week (proposals voted by reactions, a request for justice, its
ruling and a confidence vote, a Judge election). For each game and detail it prints the
figures of the brief-posts issue's "Done when" and a verdict:

- the reply to a PM of two command lines: at most 8 lines and 600 characters (its longest,
  and the longest of those that are not the player's first reply about the game, which
  also carries the game's explanations once). A message that asks for the full detail
  (``receipts``, the Hall's ``inventory``) is left out: its answer is the whole record;
- a round result (a roulette round, a race, a duel): at most 900 characters;
- no post over Discord's 2,000 characters (so nothing is split on Discord);
- the median post under 700 characters.

Lengths are the stored bodies' (the markdown format), in characters. The verdict applies
to the brief detail (the default); the full detail's figures are printed beside it for
comparison. Exit status 0 when every brief verdict holds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

from sqlalchemy import select

from dealer.clock import iso_exact
from dealer.inbox.memory import MemoryInbox
from dealer.ledger import CHIPS
from dealer.publish.memory import MemoryPublisher
from dealer.settings import Settings
from dealer.shell.admin import add_player, create_game, grant
from dealer.shell.passes import Dealer
from dealer.store.db import make_engine, migrate
from dealer.store.models import Inbound, Post
from dealer.text import command_lines

DAY = timedelta(days=1)
HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)

REPLY_LINES, REPLY_CHARS, RESULT_CHARS, POST_CHARS, MEDIAN_CHARS = 8, 600, 900, 2000, 700
RESULT_KINDS = ("round_result", "result")
"""The kinds of post that give a round's result: a roulette round, a race, a duel."""


@dataclass
class Game:
    """A scripted game: its set-up, its messages (time, sender, body, channel and, for a
    reaction, its fields) and its end."""

    name: str
    setup: Callable[[Any, datetime], None]
    start: datetime
    messages: list[tuple[Any, ...]] = field(default_factory=list)
    end: datetime | None = None


def roulette() -> Game:
    """``dealer demo``'s game: alice vs bob, 10 rounds, bob misses one preparation."""
    from dealer.demo import ALICE_BETS, ALICE_PREPARES, BOB_BETS, BOB_PREPARES, START, _prepare

    def setup(session: Any, at: datetime) -> None:
        add_player(session, "alice", at, chips=100)
        add_player(session, "bob", at, chips=100)
        create_game(session, "roulette", "demo", at, players=["alice", "bob"], start=at,
                    settings={"remind_before": "1h"})

    game = Game("roulette", setup, START, end=START + 11 * DAY + MINUTE)
    for phase in range(11):
        sent = START + phase * DAY + 2 * HOUR
        alice = [f"bet {ALICE_BETS[phase - 1]}"] if phase >= 1 else []
        bob = [f"bet {BOB_BETS[phase - 1]}"] if phase >= 1 else []
        if phase <= 9:
            alice.append(_prepare(ALICE_PREPARES[phase]))
            if phase != 4:
                bob.append(_prepare(BOB_PREPARES[phase]))
        game.messages += [(sent, "alice", "\n".join(alice), "pm"), (sent, "bob", "\n".join(bob), "pm")]
    return game


def races() -> Game:
    """A races table: two horses and the NPCs, three bettors, the race run to its end."""
    t0 = datetime(2026, 12, 1, 18, 0, tzinfo=timezone.utc)

    def setup(session: Any, at: datetime) -> None:
        for name, card in (("alice", "KS"), ("bob", "7H"), ("carol", None)):
            add_player(session, name, at, chips=50)
            if card:
                grant(session, name, card, 1, at)
        create_game(session, "races", "derby", at, players=[], start=at, server_seed="ace5" * 16)

    way = "#the-raceway"
    at = t0 + MINUTE
    game = Game("races", setup, t0, [
        (at, "alice", "sit\nhorse Thunder Hooves card KS", way),
        (at + 30 * timedelta(seconds=1), "bob", "sit\nhorse Red Rum card 7h\nready", way),
        (at + MINUTE, "alice", "ready", way),
        (at + 4 * MINUTE, "carol", "bet 20 on Red Rum", way),
        (at + 5 * MINUTE, "alice", "bet 10 on Thunder Hooves\nbet 9 on Red Rum", way),
    ])
    t = at + 2 * HOUR
    for _ in range(25):
        t += MINUTE
        game.messages += [(t, "alice", "race", way), (t + timedelta(seconds=30), "bob", "lap", way)]
    game.end = t + HOUR
    return game


def hall() -> Game:
    """A Hall cycle over three phases: packs, purchases, a gift, trades, a victory."""
    t0 = datetime(2026, 12, 1, 0, 0, tzinfo=timezone.utc)

    def setup(session: Any, at: datetime) -> None:
        for name in ("alice", "bob", "carol"):
            add_player(session, name, at)
        create_game(session, "hall", "h1", at, players=["alice", "bob"], start=at,
                    settings={"victory_chips": "2", "starting_vertebrae": "30"}, server_seed="5e" * 32)
        grant(session, "alice", "vertebrae", 30, at, game_id="h1")
        grant(session, "bob", "chips", 1, at, game_id="h1")

    def say(hours: float, sender: str, body: str) -> tuple[datetime, str, str, str]:
        return (t0 + timedelta(hours=hours), sender, body, "#game-actions")

    return Game("hall", setup, t0, [
        say(1, "alice", "buy deck pack\nopen deck pack"),
        say(1.1, "bob", "buy handy pack\nopen handy pack"),
        say(2, "carol", "join\ninventory"),
        say(2.5, "alice", "gift carol"),
        say(3, "alice", "offer 5 vertebrae to bob for 1 chip"),
        say(3.5, "bob", "accept offer 1"),
        say(4, "carol", "offer 40 vertebrae to alice for 1 vertebra"),
        say(5, "bob", "offer 2 vertebrae to carol for 1 chip"),
        say(5.5, "carol", "decline offer 2"),
        say(7, "alice", "offer 1 vertebra to carol for 1 vertebra"),
        say(25, "bob", "gift alice"),
        say(26, "carol", "buy legendary pack"),
        say(49, "alice", "buy chip"),
    ], end=t0 + 50 * HOUR)


def exoptosis() -> Game:
    """An Exoptosis duel in a Hall: the challenge, hands, a raise matched, eight plays."""
    t0 = datetime(2026, 12, 1, 0, 0, tzinfo=timezone.utc)

    def setup(session: Any, at: datetime) -> None:
        add_player(session, "alice", at)
        add_player(session, "bob", at)
        create_game(session, "hall", "x1", at, players=["alice", "bob"], start=at, server_seed="e0" * 32)
        for name, cards in (("alice", "7C 8C 9C 10C"), ("bob", "2H 3H 4H 5H 6H")):
            for card in cards.split():
                grant(session, name, card, 1, at, game_id="x1")
            grant(session, name, CHIPS, 5, at, game_id="x1")

    at = t0 + HOUR
    hall_channel = "#game-actions"
    game = Game("exoptosis", setup, t0, [
        (at, "alice", "duel bob", hall_channel),
        (at + 4 * MINUTE, "bob", "accept duel 1", hall_channel),
        # A two-command PM: a hand too small (refused), then the hand meant.
        (at + HOUR, "alice", "hand 7C 8C 9C\nhand 7C 8C 9C 10C", "pm"),
        (at + HOUR + 2 * MINUTE, "bob", "hand 2H 3H 4H 5H 6H", "pm"),
        (at + HOUR + 4 * MINUTE, "alice", "raise 2", hall_channel),
        (at + HOUR + 5 * MINUTE, "bob", "match", hall_channel),
    ])
    plays = [("bob", "2H"), ("alice", "7C"), ("bob", "3H"), ("alice", "8C"), ("bob", "4H"),
             ("alice", "9C"), ("bob", "5H"), ("alice", "10C")]
    for i, (who, card) in enumerate(plays):
        game.messages.append((at + 2 * HOUR + (i + 1) * MINUTE, who, f"play {card}", hall_channel))
    game.end = at + 3 * HOUR
    return game


def government() -> Game:
    """The Hall's government over a week: a Standard and an Urgent proposal voted by
    reactions (one vote removed), a request for justice and its ruling, a confidence vote
    on it, and a Judge election at the week's end (GH-20 to GH-34)."""
    t0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)  # a Tuesday: the election is Monday
    up, down = "\N{THUMBS UP SIGN}", "\N{THUMBS DOWN SIGN}"

    def setup(session: Any, at: datetime) -> None:
        for name in ("alice", "bob", "carol", "dave"):
            add_player(session, name, at)
        create_game(session, "hall", "g1", at, players=["alice", "bob", "carol", "dave"], start=at,
                    settings={"judge": "alice", "reputable": "alice,bob"}, server_seed="9a" * 32)

    def say(hours: float, sender: str, body: str, channel: str = "#game-actions",
            **fields: Any) -> tuple[Any, ...]:
        return (t0 + timedelta(hours=hours), sender, body, channel, fields)

    def vote(hours: float, sender: str, target: str, emoji: str, channel: str, **fields: Any) -> tuple[Any, ...]:
        return say(hours, sender, "", channel, kind="reaction", target=target, emoji=emoji, **fields)

    return Game("government", setup, t0, [
        say(1, "carol", "Shorter phases for everyone.\nset phase_length 12h", "#proposals", id="p1"),
        say(1.5, "bob", "urgent\nA victory needs three chips.\nset victory_chips 3", "#proposals", id="p2"),
        vote(2, "alice", "p1", up, "#proposals"), vote(2, "dave", "p1", up, "#proposals"),
        vote(2.5, "dave", "p1", up, "#proposals", removed=True),
        vote(3, "alice", "p2", up, "#proposals"), vote(3, "carol", "p2", down, "#proposals"),
        say(4, "dave", "Is a gift an action?", "#request-for-justice", id="q1"),
        say(5, "alice", "ruling 1: yes", "#request-for-justice"),
        say(6, "bob", "confidence 1\nproposals"),
        say(30, "alice", "I stand for Judge.", "#judge-elections", id="c1"),
        say(31, "bob", "So do I.", "#judge-elections", id="c2"),
        vote(32, "carol", "c1", up, "#judge-elections"), vote(32, "dave", "c2", up, "#judge-elections"),
        vote(33, "carol", "c2", up, "#judge-elections"),
    ], end=datetime(2026, 12, 7, 10, 30, tzinfo=timezone.utc))


GAMES = {"roulette": roulette, "races": races, "hall": hall, "exoptosis": exoptosis,
         "government": government}


def play(game: Game, detail: str) -> list[dict[str, Any]]:
    """Play ``game`` in ``detail`` and return every post queued, with what each answers."""
    with tempfile.TemporaryDirectory(prefix="dealer-posts-") as scratch:
        url = f"sqlite:///{Path(scratch) / 'posts.db'}"
        settings = Settings(home=scratch, database_url=url, inbox="memory", publish="memory",
                            deadline_overrides="", post_detail=detail, _env_file=None)
        engine = make_engine(url)
        migrate(engine)
        engine.dispose()
        inbox = MemoryInbox()
        dealer = Dealer(settings, inbox=inbox, publisher=MemoryPublisher())
        with dealer.sessions.begin() as session:
            game.setup(session, game.start)
        dealer.run_pass(game.start)
        for index, (at, sender, body, channel, *extra) in enumerate(sorted(game.messages, key=lambda m: m[0])):
            inbox.put({"id": f"m{index}", "sender": sender, "channel": channel, "body": body,
                       "sent_at": iso_exact(at), **(extra[0] if extra else {})})
            dealer.run_pass(at + timedelta(seconds=1))
        dealer.run_pass(game.end or game.start)
        with dealer.sessions() as session:
            bodies = {row.id: row.body for row in session.execute(select(Inbound.id, Inbound.body))}
            posts = [
                {"kind": p.kind, "key": p.key, "recipient": p.recipient, "body": p.body,
                 "commands": _commands(p.key, bodies)}
                for p in session.execute(select(Post.kind, Post.key, Post.recipient, Post.body).order_by(Post.id))
            ]
        dealer.dispose()
    return posts


DETAIL_WORDS = ("receipts", "receipt", "inventory", "inv", "my", "show")
"""The first words of the commands that ask for the full detail."""


def _commands(key: str, bodies: dict[int, str]) -> int:
    """The number of command lines of the message a reply answers (0: not a reply; -1: a
    message that asks for the full detail)."""
    parts = key.split(":")
    if len(parts) >= 3 and parts[0] == "in" and parts[2] == "reply" and parts[1].isdigit():
        lines = command_lines(bodies.get(int(parts[1]), ""))
        asks = any(line.split()[0].lower() in DETAIL_WORDS for line in lines)
        return -1 if asks else len(lines)
    return 0


def figures(posts: list[dict[str, Any]]) -> dict[str, Any]:
    """The issue's figures of one game's posts."""
    sizes = [len(p["body"]) for p in posts]
    replies = [p for p in posts if p["commands"] == 2]
    told: set[str] = set()
    later = []
    for p in posts:
        if p["commands"]:
            if p["recipient"] in told and p["commands"] == 2:
                later.append(p)
            told.add(p["recipient"])
    results = [len(p["body"]) for p in posts if p["kind"] in RESULT_KINDS]
    lines = lambda ps: max((len(p["body"].strip().splitlines()) for p in ps), default=0)  # noqa: E731
    chars = lambda ps: max((len(p["body"]) for p in ps), default=0)  # noqa: E731
    return {
        "posts": len(posts),
        "median": statistics.median(sizes) if sizes else 0,
        "longest": max(sizes, default=0),
        "over_2000": sum(size > POST_CHARS for size in sizes),
        "two_command_replies": len(replies),
        "reply_lines": lines(replies), "reply_chars": chars(replies),
        "later_reply_lines": lines(later), "later_reply_chars": chars(later),
        "results": len(results), "result_chars": max(results, default=0),
    }


def verdict(f: dict[str, Any]) -> list[str]:
    """What fails the issue's targets (empty: every target holds)."""
    failed = []
    if f["reply_lines"] > REPLY_LINES or f["reply_chars"] > REPLY_CHARS:
        failed.append(f"a two-command reply of {f['reply_lines']} lines, {f['reply_chars']} characters")
    if f["result_chars"] > RESULT_CHARS:
        failed.append(f"a result of {f['result_chars']} characters")
    if f["over_2000"]:
        failed.append(f"{f['over_2000']} posts over {POST_CHARS} characters")
    if f["median"] >= MEDIAN_CHARS:
        failed.append(f"a median post of {f['median']} characters")
    return failed


def main(argv: list[str] | None = None) -> int:
    """Print the figures of every game; exit 1 when a brief verdict fails."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--detail", choices=("brief", "full", "both"), default="both")
    parser.add_argument("--json", action="store_true", help="one JSON object per game and detail")
    args = parser.parse_args(argv)
    details = ["brief", "full"] if args.detail == "both" else [args.detail]
    ok = True
    for name, make in GAMES.items():
        for detail in details:
            f = figures(play(make(), detail))
            failed = verdict(f)
            if detail == "brief":
                ok = ok and not failed
            if args.json:
                print(json.dumps({"game": name, "detail": detail, **f, "failed": failed}))
                continue
            print(f"{name:10} {detail:5}  posts {f['posts']:3}, median {f['median']:6.0f} chars, "
                  f"longest {f['longest']:5}, over 2000: {f['over_2000']:2}; "
                  f"two-command replies {f['two_command_replies']:2}: at most {f['reply_lines']} lines, "
                  f"{f['reply_chars']} chars (not first: {f['later_reply_lines']} lines, "
                  f"{f['later_reply_chars']} chars); results {f['results']}: at most {f['result_chars']} chars"
                  f"  ->  {'OK' if not failed else 'FAILS: ' + '; '.join(failed)}")
    if not args.json:
        print("verdict (brief detail):", "every target holds" if ok else "a target fails")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
