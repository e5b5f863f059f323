"""The season: days of several games at once, played by scripted players through the real
daemon under faults, then the books (:mod:`season_books`).

Not part of the package: ``faults/season.py`` and ``tests/integration/test_season.py`` import
it by file name, beside :mod:`faultlib`, whose fork server and replicas run the daemons.

Time is compressed real time: the daemon is the real ``dealer run`` on the real clock, and the
games are created with short durations, so a season "day" lasts ``day_seconds`` seconds. One
run:

1. **Set-up**: ``players`` players, each with chips and a few cards in its wallet.
2. **The days**: a Stationary Roulette league (the idle players paired at random, a new pair
   as soon as two are free, each game a few rounds of a quarter day), a daily Off to the
   Races table and a Gilded Hall, a cycle at a time, with its Exoptosis matches; every
   ``tick`` each game's players may take a turn (:mod:`faults.players`) and their acts go in
   by e-mail (or the directory inbox), the signed webhook or Discord (each player keeps one).
   Meanwhile :mod:`season_faults` kills daemons, cuts connections, takes the publisher
   away and stops every daemon for the day of downtime.
3. **The end**: no new game; the players finish those in progress (a Hall's members buy
   chips to win its cycle); the faults stop; the
   daemons run clean until nothing is left to do; then they are stopped and the books are
   checked.

Randomness here (the pairs, the players' acts, the faults) is test infrastructure, a seeded
``random.Random``, not a game draw; the games draw through the fair source.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

from sqlalchemy import select
from sqlalchemy.engine import Engine, make_url

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import faultlib  # noqa: E402
import season_books  # noqa: E402
import season_faults  # noqa: E402
from transports import SECRET, Directory, Discord, Mail, Sent, Webhook  # noqa: E402

from dealer.cards import CATALOGUE  # noqa: E402
from dealer.clock import iso_exact, utcnow  # noqa: E402
from dealer.ledger import Scope  # noqa: E402
from dealer.shell.admin import add_player, create_game, grant, link_account  # noqa: E402
from dealer.views.admin import game_state, ledger_scope  # noqa: E402
from dealer.store.db import make_engine, session_factory  # noqa: E402
from dealer.store.models import Event, Game, Holding, Post  # noqa: E402
from faults.players.base import (  # noqa: E402
    DILIGENT, Act, Behaviour, PostSeen, Temperament, cast, temperaments,
)

STARTING_CHIPS = 1000
CARDS_EACH = 3
RACEWAY = "#the-raceway"


@dataclass
class Season:
    """What one season does (sizes, timing, which faults)."""

    database_url: str
    root: Path
    seed: int = 0
    days: int = 3
    players: int = 12
    day_seconds: float = 20.0
    replicas: int = 1
    kills: bool = True
    """SIGKILL daemons at random moments and named fault points all season."""
    disconnects: bool = True
    """On Postgres: cut the daemons' connections every few seconds; with e-mail, their IMAP
    connections too (on either store)."""
    outage: bool = True
    """Take the publisher's outbox away for a fifth of a day, once."""
    downtime: float = 1.0
    """Days with no daemon at all (players still write), once, mid-season; 0: none."""
    webhook: bool = True
    """Players write over the signed webhook (else the directory inbox or Discord)."""
    discord: bool = True
    """Players write on Discord (the fake's gateway; the posts of ``#the-raceway`` and the
    PMs of its players go out over its REST API, the rest to the directory outbox)."""
    email: bool = True
    """Players write by e-mail (dovecot's IMAP folder, which the daemons read in place of the
    directory inbox; their private posts come back over SMTP); needs the webhook, which
    carries what a mail cannot (a channel post, an edit, a reaction)."""
    admin: bool = True
    """Admins extend a deadline, make one due now, and pause and resume a game."""
    hall: bool = True
    """A Gilded Hall, one cycle at a time (a new one when one ends, but in the season's last
    day), and its Exoptosis matches. A cycle ends only when won (GH-8): once the season
    opens no more games its members buy chips to win it (:attr:`Player.closing`)."""
    rounds: int = 3
    """Rounds of each roulette game (a round lasts a quarter day)."""
    drain_days: float = 3.0
    """How long after the last day the games in progress may take to finish."""
    tick: float = 0.25
    """Seconds between the players' turns."""
    poll_interval: float = 0.2
    port_base: int = 0
    """The replicas' webhook ports are ``port_base + index`` (0: free ports found at start)."""


@dataclass
class Figures:
    """What the season did and what the books say: ``faults/season.py`` prints these lines."""

    season: Season
    backend: str = ""
    duration: float = 0.0
    kills: faultlib.Figures = field(default_factory=faultlib.Figures)
    """The replicas' lives and kills, and the post and deadline audits (faultlib's)."""
    faults: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    """What was played: rounds, races, games finished, messages by transport and outcome ..."""
    checks: list[tuple[str, str]] = field(default_factory=list)
    """Each check of the books and what it counted."""
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        s = self.season
        k = self.kills
        out = [
            f"store: {self.backend}; replicas: {s.replicas}; seed: {s.seed}; {s.days} days of "
            f"{s.day_seconds:g} s; {s.players} players",
            f"duration: {self.duration:.1f} s; daemon lives: {k.lives}; kills {k.kills} (named "
            f"{sum(k.kills_named.values())}, random {k.kills_random}); exits on their own {k.exits}",
            "faults: " + ", ".join(f"{name} {value}" for name, value in self.faults.items()),
            "played: " + ", ".join(f"{name} {value}" for name, value in sorted(self.counts.items())),
            "books:",
            *(f"  {name}: {what}" for name, what in self.checks),
            f"problems: {len(self.problems)}",
            *(f"  {p}" for p in self.problems[:40]),
            *([f"  ... and {len(self.problems) - 40} more"] if len(self.problems) > 40 else []),
        ]
        return out


class StoreView:
    """A :class:`~faults.players.base.GameView` on the store, read afresh at each tick."""

    def __init__(self, engine: Engine, game_id: str, kind: str, now: datetime):
        self.engine = engine
        self.game_id = game_id
        self.kind = kind
        self.now = now
        self._state: Any = None
        self._status = ""
        self._held: dict[str, dict[str, int]] = {}
        self._scope = Scope()
        with session_factory(engine)() as session:
            game = session.get(Game, game_id)
            if game is not None and game.state and game.state != "{}":
                self._state = game_state(game)[1]
                self._status = game.status
                # A Hall's players hold in its cycle's scope (GH-1), its matches' in the Hall's.
                self._scope = Scope(ledger_scope(session, game_id))

    def state(self) -> Any:
        return self._state

    def holdings(self, player: str) -> dict[str, int]:
        if player not in self._held:
            account = self._scope.player(player)
            with self.engine.connect() as connection:
                rows = connection.execute(select(Holding.item, Holding.amount)
                                          .where(Holding.account == account)).all()
            self._held[player] = {item: n for item, n in rows if n}
        return self._held[player]

    def balance(self, player: str, item: str) -> int:
        return self.holdings(player).get(item, 0)

    def posts(self) -> list[PostSeen]:
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(Post.id, Post.channel, Post.body, Post.ref)
                .where(Post.game_id == self.game_id, Post.recipient.is_(None))
                .order_by(Post.id)).all()
        return [PostSeen(key=str(i), channel=channel, body=body, ref=ref)
                for i, channel, body, ref in rows]

    def finished(self) -> bool:
        return self._status == "finished"


@dataclass
class Table:
    """A game of the season and its cast."""

    game_id: str
    kind: str
    players: dict[str, Behaviour]
    created: float
    """Monotonic time of its creation."""
    finished: bool = False


class Runner:
    """The season in progress: the games, the players' turns, the transports."""

    def __init__(self, season: Season, engine: Engine, transports: dict[str, Any],
                 faults: season_faults.Faults, progress: IO[str] | None):
        self.season = season
        self.engine = engine
        self.rng = random.Random(season.seed)
        self.players_rng = random.Random(self.rng.randrange(2**32))
        self.names = [f"p{i:02d}" for i in range(1, season.players + 1)]
        self.transports = transports
        # The players take the transports in turn: the directory inbox (or e-mail, read in its
        # place), the webhook, Discord.
        ways = ["email" if "email" in transports else "dir",
                *(t for t in ("webhook", "discord") if t in transports)]
        self.transport_of = {name: ways[i % len(ways)] for i, name in enumerate(self.names)}
        self.tables: list[Table] = []
        self.idle = list(self.names)
        self.said: dict[str, str] = {}
        self.count = 0
        self.acts: dict[str, int] = {}
        self.faults = faults
        self.progress = progress
        self.last_races_day = -1
        self.last_tick: float | None = None
        """Monotonic time of the last tick: a turn's chance follows the time since (a loaded
        machine ticks slower than ``tick``)."""
        self.cycles = 0

    # -- set-up ----------------------------------------------------------------------------

    def set_up(self) -> int:
        """Players with chips and cards; return the chips handed out."""
        now = utcnow()
        cards = [card.code for card in CATALOGUE]
        with session_factory(self.engine).begin() as session:
            for name in self.names:
                add_player(session, name, now, chips=STARTING_CHIPS)
                for code in self.rng.sample(cards, CARDS_EACH):
                    grant(session, name, code, 1, now)
        return STARTING_CHIPS * len(self.names)

    def seconds(self, days: float) -> str:
        """A duration setting of ``days`` season days, in whole seconds (at least 1)."""
        return f"{max(1, round(days * self.season.day_seconds))}s"

    def open_games(self, day: int) -> None:
        """New roulette pairs from the idle players; the day's races table once the last is over."""
        self.rng.shuffle(self.idle)
        while len(self.idle) >= 2:
            a, b = self.idle.pop(), self.idle.pop()
            settings = {"rounds": str(self.season.rounds),
                        "round_length": self.seconds(0.25),
                        "preparation_length": self.seconds(0.25), "remind_before": ""}
            self._create("roulette", f"rl{len(self.tables) + 1:04d}", [a, b], settings, [a, b])
        races = [t for t in self.tables if t.kind == "races"]
        if day > self.last_races_day and all(t.finished for t in races):
            self.last_races_day = day
            seated = self.rng.sample(self.names, min(8, len(self.names)))
            settings = {"seating_window": self.seconds(0.15), "betting_window": self.seconds(0.08),
                        "idle_action_after": self.seconds(0.04), "min_horses": "4"}
            self._create("races", f"races-d{day + 1:02d}", [], settings, seated)
        # No cycle in the last day: one ends only when won (GH-8), and its matches with it.
        if self.season.hall and not self.running("hall") and day < self.season.days - 1:
            self.open_hall()

    def open_hall(self) -> None:
        """A Hall cycle of six (four named, two who join): phases half a day (a message read
        after its phase is refused as late, and the daemons under attack lag by seconds), a
        week (GH-34, GH-35) a day, a low victory so cycles end, reputable players and a Judge."""
        self.cycles += 1
        names = self.rng.sample(self.names, min(6, len(self.names)))
        settings = {"phase_length": self.seconds(0.5), "day_length": self.seconds(1 / 7),
                    "vote_grace": "1s", "victory_chips": "4", "starting_vertebrae": "120",
                    "reputable": ",".join(names[:2]), "judge": names[2],
                    # Its battles and duels as short as its phases (GH-10, GH-11, GH-17).
                    "match_setup_window": self.seconds(0.1), "match_betting_window": self.seconds(0.03),
                    "match_turn_length": self.seconds(0.05)}
        # Its Judge and reputable players play it through (a silent Judge rules on nothing).
        temper = {**temperaments(names, self.players_rng), **dict.fromkeys(names[:3], DILIGENT)}
        self._create("hall", f"h{self.cycles:02d}", names[:4], settings, names, temper)

    def adopt_matches(self) -> None:
        """Each Exoptosis match a Hall opened gets a cast of its own (its players)."""
        known = {t.game_id for t in self.tables}
        halls = [t.game_id for t in self.tables if t.kind == "hall"]
        with self.engine.connect() as connection:
            opened = connection.execute(select(Event.data).where(
                Event.game_id.in_(halls), Event.type == "child.opened")).scalars().all()
        for data in opened:
            if data["game_id"] not in known:
                self.tables.append(Table(data["game_id"], data["kind"],
                                         cast(data["kind"], list(data["players"]), self.players_rng),
                                         time.monotonic()))

    def _create(self, kind: str, game_id: str, players: list[str], settings: dict[str, str],
                cast_names: list[str], temper: dict[str, Temperament] | None = None) -> None:
        now = utcnow()
        with session_factory(self.engine).begin() as session:
            create_game(session, kind, game_id, now, players=players,
                        start=now + timedelta(seconds=0.5), settings=settings,
                        channel=RACEWAY if kind == "races" else None)
        self.tables.append(Table(game_id, kind, cast(kind, cast_names, self.players_rng, temper),
                                 time.monotonic()))

    # -- the players -----------------------------------------------------------------------

    def tick(self, opening: bool, day: int) -> None:
        """Each running game's players take a turn now and then; finished games free theirs."""
        if opening:
            self.open_games(day)
        self.adopt_matches()
        now = utcnow()
        stamp = iso_exact(now)
        ticked, self.last_tick = self.last_tick, time.monotonic()
        since = self.season.tick if ticked is None else self.last_tick - ticked
        for table in self.tables:
            if table.finished:
                continue
            view = StoreView(self.engine, table.game_id, table.kind, now)
            if view.finished():
                table.finished = True
                if table.kind == "roulette":
                    self.idle += list(table.players)
                continue
            for name in sorted(table.players):
                player = table.players[name]
                player.closing = not opening  # no game opens any more: each hastens its end
                if self.players_rng.random() > self.turn_chance(table.kind, since):
                    continue
                for act in player.turn(view, self.players_rng):
                    same_second = stamp if player.temperament.simultaneous else None
                    self.deliver(act, table.game_id, same_second)

    def turn_chance(self, kind: str, since: float) -> float:
        """About three turns a phase, ``since`` seconds after the last tick: a roulette phase is
        a quarter day, a Hall's half a day, a races phase shorter, an Exoptosis turn 5 % of a
        day (the Hall's ``match_turn_length``)."""
        share = {"roulette": 0.25, "hall": 0.5}.get(kind, 0.05)
        return min(1.0, 3.0 * since / (self.season.day_seconds * share))

    def deliver(self, act: Act, game_id: str, stamp: str | None) -> None:
        """Hand ``act`` to its sender's transport as an inbox message."""
        self.count += 1
        ident = f"s{self.season.seed}-{self.count:06d}"
        message: dict[str, Any] = {
            "id": ident, "sender": act.sender, "channel": act.channel,
            "sent_at": stamp or iso_exact(utcnow()), "game": act.game or game_id,
        }
        if act.kind == "say":
            message["body"] = act.body
            if act.key:
                self.said[act.key] = ident
        else:
            target = self.said.get(act.ref or "", act.ref or "")
            if target.startswith("msg:"):
                target = target[4:]
            message.update(kind={"edit": "edit", "delete": "delete"}.get(act.kind, "reaction"),
                           target=target, body=act.body)
            if act.kind in ("react", "unreact"):
                message["emoji"] = act.emoji
                if act.kind == "unreact":
                    message["removed"] = True
        self.acts[act.expect] = self.acts.get(act.expect, 0) + 1
        self.transports[self.transport_of[act.sender]].deliver(message)

    def running(self, kind: str) -> list[str]:
        """The games of ``kind`` not seen finished yet."""
        return [t.game_id for t in self.tables if t.kind == kind and not t.finished]

    def all_finished(self) -> bool:
        return all(t.finished for t in self.tables)


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run(season: Season, progress: IO[str] | None = None) -> Figures:
    """Set up, play the days under faults, drain and check the books; return the figures."""
    root = season.root
    inbox, outbox = root / "inbox", root / "outbox"
    for folder in (inbox, outbox):
        folder.mkdir(parents=True, exist_ok=True)
    engine = make_engine(season.database_url)
    postgres = engine.dialect.name == "postgresql"
    figures = Figures(season, backend=make_url(season.database_url).get_backend_name())
    kills = figures.kills
    sent = Sent()
    ports = [season.port_base + i if season.port_base else _free_port()
             for i in range(season.replicas)]
    if season.email and not season.webhook:
        raise ValueError("e-mail needs the webhook: it carries what a mail cannot (a channel "
                         "post, an edit, a reaction), and no daemon reads the directory inbox")
    send_log, pass_log = root / "sends.log", root / "passes.log"
    transports: dict[str, Any] = {"dir": Directory(inbox, sent)}
    if season.webhook:
        transports["webhook"] = Webhook(ports, sent)
        transports["webhook"].start()
    discord: Discord | None = None
    if season.discord:
        discord = transports["discord"] = Discord(sent)
        discord.fallback = transports.get("webhook", transports["dir"])
        discord.engine = engine
    mail: Mail | None = None
    if season.email:
        # Its IMAP connections cut as often as Postgres's (on SQLite too).
        mail = transports["email"] = Mail(sent, send_log, season.seed + 2,
                                          max(1.0, season.day_seconds / 4) if season.disconnects else None,
                                          root / "outage")
        mail.fallback = transports["webhook"]
        (root / "dkim.json").write_text(json.dumps(mail.dkim_records()), encoding="utf-8")
        mail.start()
    faults = season_faults.Faults(season, engine, root, send_log, random.Random(season.seed + 1))
    runner = Runner(season, engine, transports, faults, progress)
    chips = runner.set_up()
    if discord is not None:
        with session_factory(engine).begin() as session:
            for name, way in runner.transport_of.items():
                if way == "discord":
                    link_account(session, name, f"discord:{discord.user(name)}", utcnow())
    if mail is not None:
        with session_factory(engine).begin() as session:
            for name, way in runner.transport_of.items():
                if way == "email":
                    link_account(session, name, f"email:{mail.address(name)}", utcnow())
    # The raceway on Discord; each player's PMs where they play (Discord first, then mail),
    # the rest's and every other channel's to the directory outbox.
    pm = [*(["discord:dm"] if discord else []), *(["email"] if mail else [])]
    routes = [*(discord.routes() if discord else []), *([f"pm={','.join(pm)}"] if pm else []),
              f"*=dir:{outbox}"]
    server = faultlib.ForkServer()
    replicas = []
    attack = faults.attack()
    for index in range(season.replicas):
        home = root / f"replica-{index}"
        home.mkdir(exist_ok=True)
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("DEALER_", "PG"))}
        env.update({
            "DEALER_HOME": str(home),
            "DEALER_DATABASE_URL": season.database_url,
            "DEALER_INBOX": f"dir:{inbox}",
            "DEALER_PUBLISH": f"dir:{outbox}",
            "DEALER_POLL_INTERVAL": str(season.poll_interval),
            "DEALER_DEADLINE_OVERRIDES": "",
            "DEALER_OVERRIDES_FILE": str(faults.overrides),
            "DEALER_PUBLISH_BACKOFF": "0.5",
            "DEALER_WEBHOOK_LISTEN": f"127.0.0.1:{ports[index]}" if season.webhook else "",
            "DEALER_WEBHOOK_SECRET": SECRET if season.webhook else "",
            "DEALER_ROUTES": ";".join(routes) if pm else "",
            **(mail.env() if mail else {}),
            "FAULTRUN_DKIM": str(root / "dkim.json") if mail else "",
            **({"DEALER_DISCORD_TOKEN": discord.fake.token,
                "DEALER_DISCORD_API_URL": discord.fake.api_url,
                "DEALER_DISCORD_GATEWAY_URL": discord.fake.gateway_url} if discord else {}),
            "PGAPPNAME": faultlib.APPLICATION,
            "FAULTRUN_SEND_LOG": str(send_log),
            "FAULTRUN_PASS_LOG": str(pass_log),
            "FAULTRUN_OUTAGE": str(faults.flag),
        })
        replicas.append(faultlib.Replica(index, attack, env, root / f"replica-{index}.log",
                                         server, random.Random(runner.rng.random())))
    began = time.monotonic()
    length = season.days * season.day_seconds
    settled = None
    try:
        if discord is not None:
            # The players write once a daemon has listened: a channel's history is read back
            # from the first catch-up on, which sets its cursor (docs/DISCORD.md, "Catch-up").
            # Its first life lives that long (a gateway's ready takes seconds, more than most
            # lives under attack), then dies as a random one.
            limit = time.monotonic() + 120
            while not (discord.connected(0.1) and discord.listened(engine)):
                for replica in replicas:
                    replica.watch(kills, attacking=False)
                if time.monotonic() > limit:
                    figures.problems.append("no daemon caught up on Discord in 120 s")
                    break
            for replica in replicas:
                if season.kills and replica.current is not None:
                    replica.current.kill_at = time.monotonic() + replica.rng.uniform(
                        attack.shortest_random_life, attack.longest_random_life)
            began = time.monotonic()
        faults.start(began, postgres)
        while True:
            elapsed = time.monotonic() - began
            day = int(elapsed // season.day_seconds)
            opening = elapsed < length
            if not opening and runner.all_finished():
                break
            if elapsed > length + season.drain_days * season.day_seconds:
                left = [t.game_id for t in runner.tables if not t.finished]
                figures.problems.append(f"games stuck: {len(left)} not finished "
                                        f"{season.drain_days:g} days after the last: {left[:5]}")
                break
            def watch() -> None:
                for replica in replicas:
                    replica.watch(kills, attacking=season.kills and opening)

            if not faults.step(elapsed, replicas, kills, runner.running("roulette"), watch):
                watch()
            runner.tick(opening, day)
            if progress and day != getattr(run, "_shown", None):
                run._shown = day  # type: ignore[attr-defined]
                print(f"day {day + 1}: {len(runner.tables)} games, {runner.count} messages, "
                      f"{kills.kills} kills", file=progress)
            time.sleep(season.tick)
        faults.stop(kills)
        if mail is not None:
            mail.stop_faults()
        for replica in replicas:
            replica.end_attack(kills)
        if progress:
            print(f"season over after {time.monotonic() - began:.1f} s; draining", file=progress)
        limit = time.monotonic() + 120
        while True:
            for replica in replicas:
                replica.watch(kills, attacking=False)
            if all(t.idle() for t in transports.values()):
                settled = faultlib._settled(engine, inbox)
                if settled:
                    break
            if time.monotonic() > limit:
                figures.problems.append("not settled 120 s after the season")
                settled = utcnow()
                break
            server.wait(timeout=0.05)
    finally:
        faults.stop(kills)
        for replica in replicas:
            replica.stop()
        server.close()
        for transport in transports.values():
            transport.close()
    figures.duration = time.monotonic() - began
    lives = [life for replica in replicas for life in replica.lives]
    kills.lives = len(lives)
    figures.faults = faults.figures()
    if mail is not None and mail.cut_every:
        figures.faults["IMAP connections cut"] = mail.imap_cuts
    if mail is not None:
        figures.faults["SMTP sessions cut"] = mail.smtp_cuts
        figures.faults["SMTP mails refused (451)"] = mail.smtp_refusals
        figures.faults["SMTP refused in the outage"] = mail.out
    figures.counts.update({f"acts {k}": v for k, v in runner.acts.items()})
    season_books.audit(engine, root, sent, runner, lives, settled or utcnow(), chips,
                       faults, figures)
    engine.dispose()
    return figures


def clear(root: Path) -> None:
    """Remove a former season's folder."""
    if root.exists():
        shutil.rmtree(root)
