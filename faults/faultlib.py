"""The fault-injection run: the daemon under load, killed again and again, then the books.

Not part of the package: ``faults/run.py`` and ``tests/integration/test_fault_run.py``
import it by file name. One run:

1. **Set-up** (in this process, on the real store): ``games`` Stationary Roulette games of
   two players each, with short real deadlines (a preparation phase and rounds of
   ``round_length`` whole seconds, the games' starts spread over one round so a deadline
   falls due every fraction of a second), enough rounds to outlast the attack.
2. **Attack**: a feeder thread writes inbox files at a steady rate (preparations, bets,
   both, some invalid); ``replicas`` daemons run as real processes (forked by
   ``faults/daemon.py``, which imports dealer once: ``dealer run`` with the ``DEALER_*``
   environment), each restarted like a supervisor
   would as soon as it dies, whether it was killed or exited on its own. Each life is
   planned at its start: killed with SIGKILL at a named fault point of
   :mod:`dealer.shell.faults` (``DEALER_FAULT=point@N``: the process kills itself the N-th
   time it gets there), or by the supervisor at a random moment. On Postgres a second
   thread also cuts the daemons' connections (``pg_terminate_backend`` on the backends
   whose ``application_name`` is the run's). The attack ends after ``kills`` kills.
3. **Drain**: the feeder stops and every replica gets one last life with no fault, until
   the inbox is empty, no message or post is pending and no deadline is due (games may go
   on: their next deadlines are still to come); then it is stopped with SIGTERM.
4. **Books** (:func:`audit`): every inbox file stored once and moved once (to
   ``processed/`` or ``rejected/``), none pending or failed; every post delivered and in
   the outbox as one file, never sent twice (the send log of ``faults/daemon.py``: a post
   may be sent again, rewriting the same file, only if no earlier send of it was in a
   batch that committed: its life was killed before the batch's commit, or the batch
   rolled back under a cut connection; :func:`resends`); every adjudicated round's and every
   finished game's posts present; every deadline fired once, not early, in order, and
   matching the game's history; the ledger balanced (each item sums to zero over all
   accounts, the holdings equal the entries, no balance below zero, no entry crossing a
   scope, the chips handed out at set-up all still there) and every game's replay
   (:mod:`dealer.replay`) agreeing with the store.

Randomness here (which life dies where, what the feeder writes) is test infrastructure,
not a game draw: a seeded ``random.Random`` (tests/unit/test_no_random.py scans dealer/
only). Timing makes no two runs alike anyway; the seed is printed with the figures.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any, Iterator

from sqlalchemy import exists, select, text
from sqlalchemy.engine import Engine, make_url

import dealer
from dealer.clock import iso_exact, utcnow
from dealer.ledger import CHIPS, MINT, scope_of
from dealer.replay import replay_game
from dealer.shell.admin import add_player, create_game
from dealer.shell.faults import POINTS
from dealer.store.db import make_engine, migrate, normalise_url, session_factory
from dealer.store.models import Deadline, Event, Holding, Inbound, LedgerEntry, Post

LAUNCHER = Path(__file__).resolve().parent / "daemon.py"
STARTING_CHIPS = 1000
START_UP_LIMIT = 30.0
"""Seconds a named life may take to begin its loop (Attack.named_life_limit)."""
APPLICATION = "dealer-faultrun"
"""The ``application_name`` of the daemons' Postgres connections (``PGAPPNAME``): the
connections the disconnect thread cuts, and no others."""

LAYOUTS = [(25, 15), (30, 10), (35, 5), (28, 12)]
BETS = ["bet gold 30 silver 10", "bet gold 40", "bet silver 40", "bet gold 20 black 20",
        "bet silver 30 black 10"]
INVALID = ["bet gold 50", "prepare black gold 20 silver 20", "bet gold forty", "prepare"]


@dataclass
class Attack:
    """What one run does (sizes, rates, how the daemon dies)."""

    database_url: str
    root: Path
    kills: int = 50
    """The attack ends once the daemons have been killed this many times in all."""
    replicas: int = 1
    games: int = 10
    round_length: int = 2
    """Seconds per round (and for the preparation phase)."""
    rounds: int | None = None
    """Rounds per game; by default enough for the games to outlast the attack."""
    message_rate: float = 25.0
    """Inbox files written per second during the attack."""
    random_share: float = 0.5
    """Share of the lives killed at a random moment (the others at a named point)."""
    longest_random_life: float = 1.0
    """A life killed at random lives up to this many seconds (uniformly) ..."""
    shortest_random_life: float = 0.0
    """... and at least this many."""
    exec_lives: bool = False
    """Each life a new program (``exec``: it imports dealer, as under a supervisor) rather
    than a fork of the fork server, which imported dealer once."""
    named_life_limit: float = 2.5
    """A life planned for a named point that has not reached it this long after its loop
    began is killed anyway. Its start-up is not counted (when the pass log says when the loop
    began, ``FAULTRUN_PASS_LOG``; up to :data:`START_UP_LIMIT`): on a loaded machine it may
    take longer than the limit, and no named life would reach its point, nor do any work."""
    disconnect_every: float | None = None
    """On Postgres: cut the daemons' connections about this often (seconds); None: never."""
    poll_interval: float = 0.2
    drain_limit: float = 90.0
    seed: int = 0


@dataclass
class Life:
    """One process of one replica, from its start to its death."""

    replica: int
    pid: int
    plan: str
    """``random`` or the ``DEALER_FAULT`` value (``after-send@2``); ``clean`` in the drain."""
    kill_at: float = math.inf
    """Monotonic time at which the supervisor kills it (a random kill, or a named point's limit)."""
    end: str = ""
    """``named`` (killed itself at its point), ``random`` (killed by the supervisor),
    ``exit N`` (ended on its own) or ``stopped`` (SIGTERM at the end of the run)."""
    began: float = 0.0
    """When it was asked of the fork server (Unix time)."""
    ended: float | None = None
    """When its end was seen (Unix time); None while it runs."""

    @property
    def died(self) -> bool:
        """Killed, or ended on its own before the end of the run."""
        return self.end in ("named", "random") or self.end.startswith("exit")


@dataclass
class Figures:
    """What a run did and what the books say: the figures ``faults/run.py`` prints."""

    seed: int = 0
    replicas: int = 1
    backend: str = ""
    duration: float = 0.0
    lives: int = 0
    kills_named: Counter[str] = field(default_factory=Counter)
    kills_random: int = 0
    exits: int = 0
    exit_reasons: Counter[str] = field(default_factory=Counter)
    disconnects: int = 0
    messages: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    posts: int = 0
    sends: int = 0
    resends_after_kill: int = 0
    resends_after_cut: int = 0
    doubles: int = 0
    missing: int = 0
    deadlines_fired: int = 0
    misfires: int = 0
    rounds_resolved: int = 0
    games_finished: int = 0
    deadlocks: int = 0
    killed_with_pass: int = 0
    """Lives killed during the attack that had completed at least one pass."""
    killed_passes: int = 0
    """Passes completed by the lives killed during the attack."""
    killed_started: int = 0
    """Lives killed during the attack after their start-up: their loop had begun."""
    started_with_pass: int = 0
    """Of those, the lives that had completed at least one pass."""
    problems: list[str] = field(default_factory=list)

    @property
    def kills(self) -> int:
        return sum(self.kills_named.values()) + self.kills_random

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        named = ", ".join(f"{point} {n}" for point, n in sorted(self.kills_named.items()))
        outcomes = ", ".join(f"{k} {n}" for k, n in sorted(self.outcomes.items()))
        reasons = "; ".join(f"{n} x {why}" for why, n in self.exit_reasons.most_common(5))
        return [
            f"store: {self.backend}; replicas: {self.replicas}; seed: {self.seed}",
            f"duration: {self.duration:.1f} s; daemon lives: {self.lives}",
            f"kills: {self.kills} (named {sum(self.kills_named.values())}, random {self.kills_random})",
            f"  named: {named or 'none'}",
            f"killed lives that completed a pass: {self.killed_with_pass} of {self.kills} "
            f"({self.killed_passes} passes in all)",
            f"  of the {self.killed_started} killed after their start-up (their loop begun): "
            f"{self.started_with_pass} completed a pass",
            f"exits on their own: {self.exits}" + (f" ({reasons})" if reasons else ""),
            f"forced disconnects: {self.disconnects}",
            f"messages: {self.messages} ({outcomes or 'none stored'})",
            f"posts: {self.posts}; sends {self.sends}; re-sent after a kill "
            f"{self.resends_after_kill}; re-sent by the other replica after a cut connection "
            f"{self.resends_after_cut}; doubles {self.doubles}; missing {self.missing}",
            f"deadlines fired: {self.deadlines_fired}; misfires {self.misfires}; rounds "
            f"resolved {self.rounds_resolved}; games finished {self.games_finished}",
            f"deadlocks: {self.deadlocks}",
            f"problems: {len(self.problems)}",
            *(f"  {p}" for p in self.problems[:40]),
            *([f"  ... and {len(self.problems) - 40} more"] if len(self.problems) > 40 else []),
        ]


# -- the store ---------------------------------------------------------------------------------


@contextmanager
def scratch_store(url: str | None, root: Path, prefix: str, keep: bool = False) -> Iterator[str]:
    """A migrated store for one run; yield its URL. By default a SQLite file in ``root``; a
    Postgres URL is used inside a schema of its own (``<prefix>_<pid>``, chosen through
    ``search_path``), dropped at the end unless ``keep``, so the run neither reads nor
    disturbs what else the database holds."""
    url = url or f"sqlite:///{root / 'dealer.db'}"
    schema = None
    admin_url = normalise_url(url)
    if make_url(admin_url).get_backend_name() == "postgresql":
        schema = f"{prefix}_{os.getpid()}"
        admin = make_engine(admin_url)
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
            connection.execute(text(f'CREATE SCHEMA "{schema}"'))
        admin.dispose()
        url = make_url(admin_url).update_query_dict(
            {"options": f"-csearch_path={schema}"}).render_as_string(hide_password=False)
    try:
        engine = make_engine(url)
        migrate(engine)
        engine.dispose()
        yield url
    finally:
        if keep:
            print(f"kept: {root}" + (f", schema {schema}" if schema else ""), file=sys.stderr)
        if schema and not keep:
            admin = make_engine(admin_url)
            with admin.begin() as connection:
                connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
            admin.dispose()


# -- set-up ------------------------------------------------------------------------------------


@dataclass
class Table:
    """The games of a run, as the feeder sees them."""

    games: list[tuple[str, str, str]]
    """(game id, first player, second player)."""
    chips: int
    """Chips handed out to the players at set-up."""


def set_up(engine: Engine, attack: Attack, rounds: int) -> Table:
    """Create the players and the games on the store (migrated already)."""
    now = utcnow()
    first = now + timedelta(seconds=2)  # the first daemon is up by then
    spread = timedelta(seconds=attack.round_length) / attack.games
    games = []
    settings = {
        "rounds": str(rounds),
        "round_length": f"{attack.round_length}s",
        "preparation_length": f"{attack.round_length}s",
        "remind_before": "",
    }
    with session_factory(engine).begin() as session:
        for i in range(attack.games):
            game_id, a, b = f"g{i:03d}", f"p{2 * i:03d}", f"p{2 * i + 1:03d}"
            add_player(session, a, now, chips=STARTING_CHIPS)
            add_player(session, b, now, chips=STARTING_CHIPS)
            create_game(session, "roulette", game_id, now, players=[a, b],
                        start=first + i * spread, settings=settings)
            games.append((game_id, a, b))
    return Table(games, 2 * attack.games * STARTING_CHIPS)


# -- load --------------------------------------------------------------------------------------


class Feeder(threading.Thread):
    """Writes inbox files at a steady rate, each atomically (a hidden name, then renamed)."""

    def __init__(self, inbox: Path, table: Table, rate: float, seed: int):
        super().__init__(name="feeder", daemon=True)
        self.inbox = inbox
        self.table = table
        self.interval = 1.0 / rate
        self.rng = random.Random(seed)
        self.written: list[str] = []
        self.halt = threading.Event()

    def run(self) -> None:
        due = time.monotonic()
        while not self.halt.is_set():
            self.write_one()
            due += self.interval
            self.halt.wait(max(0.0, due - time.monotonic()))

    def body(self) -> str:
        rng = self.rng
        gold, silver = rng.choice(LAYOUTS)
        prepare = f"prepare {rng.choice(['gold', 'silver', 'black'])} gold {gold} silver {silver}"
        roll = rng.random()
        if roll < 0.35:
            return prepare
        if roll < 0.6:
            return rng.choice(BETS)
        if roll < 0.9:
            return f"{rng.choice(BETS)}\n{prepare}"
        return rng.choice(INVALID)

    def write_one(self) -> None:
        ident = f"f{len(self.written) + 1:07d}"
        _, a, b = self.rng.choice(self.table.games)
        message = {"id": ident, "sender": self.rng.choice([a, b]), "channel": "pm",
                   "body": self.body(), "sent_at": iso_exact(utcnow())}
        temporary = self.inbox / f".{ident}.tmp"
        temporary.write_text(json.dumps(message), encoding="utf-8")
        os.replace(temporary, self.inbox / f"{ident}.json")
        self.written.append(ident)


CUT = "cut"
"""The send log's line for a forced disconnect (in place of a process id)."""


class Disconnector(threading.Thread):
    """On Postgres: cuts every connection of the run's daemons, about every ``every`` s."""

    def __init__(self, engine: Engine, every: float, seed: int, send_log: Path):
        super().__init__(name="disconnector", daemon=True)
        self.engine = engine
        self.send_log = send_log
        self.every = every
        self.rng = random.Random(seed)
        self.cut = 0
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(self.rng.uniform(0.5, 1.5) * self.every):
            with self.engine.connect() as connection:
                cut = connection.execute(text(
                    "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND application_name = :name"
                    " AND pid <> pg_backend_pid()"), {"name": APPLICATION}).scalar_one()
                connection.commit()
            self.cut += int(cut)
            if cut:
                # A mark in the send log, for the reader: the batches under way roll back
                # (their senders' ``rolled back`` marks follow), their posts free again.
                with open(self.send_log, "a", encoding="utf-8") as log:
                    log.write(f"{CUT} - -\n")


# -- the supervisor ----------------------------------------------------------------------------


class ForkServer:
    """``faults/daemon.py``: forks the daemon's lives and tells how each ended."""

    def __init__(self, exec_lives: bool = False) -> None:
        env = {key: value for key, value in os.environ.items() if not key.startswith("DEALER_")}
        self.exec_lives = exec_lives
        self.process = subprocess.Popen(
            [sys.executable, str(LAUNCHER)], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )
        self.codes: dict[int, int] = {}
        self.spawned: list[int] = []
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._read, name="fork-server", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            word, pid, *code = line.decode().split()
            with self.changed:
                if word == "spawned":
                    self.spawned.append(int(pid))
                else:
                    self.codes[int(pid)] = int(code[0])
                self.changed.notify_all()

    def spawn(self, env: dict[str, str], log: Path) -> int:
        """Start a life; return its pid."""
        assert self.process.stdin is not None
        with self.changed:
            request = {"env": env, "log": str(log), "exec": self.exec_lives}
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
            if not self.changed.wait_for(lambda: self.spawned, timeout=30):
                raise RuntimeError("the fork server does not answer")
            return self.spawned.pop(0)

    def code(self, pid: int) -> int | None:
        """How life ``pid`` ended (its exit code; -9 after SIGKILL), or None while it runs."""
        with self.changed:
            return self.codes.get(pid)

    def wait(self, pid: int | None = None, timeout: float = 30.0) -> int | None:
        """Wait until life ``pid`` ends (or, with None, any other change) or ``timeout`` s pass."""
        with self.changed:
            if pid is None:
                self.changed.wait(timeout)
                return None
            self.changed.wait_for(lambda: pid in self.codes, timeout=timeout)
            return self.codes.get(pid)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


class Replica:
    """One daemon slot, restarted like a supervisor would whenever its life ends."""

    def __init__(self, index: int, attack: Attack, env: dict[str, str], log: Path,
                 server: ForkServer, rng: random.Random):
        self.index = index
        self.attack = attack
        self.env = env
        self.log = log
        self.server = server
        self.rng = rng
        self.current: Life | None = None
        self.lives: list[Life] = []
        self.looping: set[int] = set()
        """The lives seen to have begun their loop (the pass log's ``PID started``)."""
        self.read_to = 0
        self.began: set[int] = set()
        self.points = list(POINTS)
        self.rng.shuffle(self.points)
        self.next_point = 0

    def plan(self, killed: Counter[str]) -> str:
        """How the next life dies: ``random``, or a named point and the hit that kills.

        The points are taken in turn, those that have killed no life yet first.
        """
        if self.rng.random() < self.attack.random_share:
            return "random"
        order = sorted(range(len(self.points)), key=lambda i: (
            killed[self.points[(self.next_point + i) % len(self.points)]] > 0, i))
        at = (self.next_point + order[0]) % len(self.points)
        self.next_point = at + 1
        return f"{self.points[at]}@{self.rng.choice([1, 1, 2, 3])}"

    def start(self, clean: bool, killed: Counter[str]) -> None:
        plan = "clean" if clean else self.plan(killed)
        env = dict(self.env)
        if plan not in ("random", "clean"):
            env["DEALER_FAULT"] = plan
        with open(self.log, "a", encoding="utf-8") as log:
            log.write(f"=== faultrun: {utcnow():%H:%M:%S.%f} replica {self.index} life "
                      f"{len(self.lives) + 1}, plan {plan} ===\n")
        life = Life(self.index, self.server.spawn(env, self.log), plan, began=time.time())
        if plan == "random":
            life.kill_at = time.monotonic() + self.rng.uniform(
                self.attack.shortest_random_life, self.attack.longest_random_life)
        elif plan != "clean":
            life.kill_at = time.monotonic() + (START_UP_LIMIT if self.env.get("FAULTRUN_PASS_LOG")
                                               else self.attack.named_life_limit)
        self.current = life
        self.lives.append(life)

    def watch(self, figures: Figures, attacking: bool) -> None:
        """Restart a life that ended; kill one whose time has come."""
        life = self.current
        if life is None:
            self.start(not attacking, figures.kills_named)
            return
        code = self.server.code(life.pid)
        if life.plan not in ("random", "clean") and life.pid not in self.looping and \
                self._loop_began(life.pid):
            self.looping.add(life.pid)
            life.kill_at = time.monotonic() + self.attack.named_life_limit
        if code is None and time.monotonic() >= life.kill_at:
            if life.plan not in ("random", "clean"):
                # Its point was not reached in time: leave its stack in the log, then kill it.
                _signal(life.pid, signal.SIGUSR1)
                self.server.wait(life.pid, timeout=0.1)
            if _signal(life.pid, signal.SIGKILL):
                self.server.wait(life.pid)
                life.end, life.ended = "random", time.time()
                figures.kills_random += 1
                self.current = None
                return
            code = self.server.wait(life.pid)  # it ended by itself meanwhile
        if code is None:
            return
        if code == -signal.SIGKILL and life.plan not in ("random", "clean"):
            life.end = "named"
            life.ended = time.time()
            figures.kills_named[life.plan.partition("@")[0]] += 1
        else:
            life.end, life.ended = f"exit {code}", time.time()
            figures.exits += 1
        self.current = None

    def _loop_began(self, pid: int) -> bool:
        """Whether life ``pid`` has begun its loop: the pass log's lines read since last time."""
        path = self.env.get("FAULTRUN_PASS_LOG")
        if not path or not os.path.exists(path):
            return False
        with open(path, "rb") as log:
            log.seek(self.read_to)
            chunk = log.read()
        chunk = chunk[:chunk.rfind(b"\n") + 1]  # whole lines only
        self.read_to += len(chunk)
        self.began.update(int(line.split()[0]) for line in chunk.decode().splitlines()
                          if line.split()[1:2] == ["started"])
        return pid in self.began

    def end_attack(self, figures: Figures) -> None:
        """A last kill at a random moment: the life in progress (if any) is killed now."""
        if self.current is not None:
            self.current.kill_at = time.monotonic()
            self.looping.add(self.current.pid)  # now, even if its loop has just begun
            self.watch(figures, attacking=True)

    def stop(self) -> None:
        """SIGTERM the life in progress (the end of the run)."""
        life = self.current
        if life is None:
            return
        if self.server.code(life.pid) is None and _signal(life.pid, signal.SIGTERM):
            if self.server.wait(life.pid) is None:
                _signal(life.pid, signal.SIGKILL)
                self.server.wait(life.pid)
                life.end, life.ended = "stopped (hung: killed)", time.time()
                return
        life.end, life.ended = "stopped", time.time()
        self.current = None


def _signal(pid: int, signum: int) -> bool:
    """Send ``signum`` to ``pid``; False if it is gone (and reaped) already."""
    try:
        os.kill(pid, signum)
        return True
    except ProcessLookupError:
        return False


def _settled(engine: Engine, inbox: Path) -> datetime | None:
    """The time at which nothing was left to do (no inbox file, no pending message or post,
    no deadline due), or None. Games still running are fine: their next deadlines are
    still to come.

    The store is asked in one statement, so in one snapshot: asked in three, on Postgres
    (each statement sees what was committed before it), a deadline fired and committed
    between the look at the posts and the look at the deadlines left its new posts
    pending, unseen by both, and the drain stopped the daemon before it sent them. The
    inbox is looked at first: a file gone from it was stored by a commit before."""
    now = utcnow()
    if any(inbox.glob("*.json")):
        return None
    with engine.connect() as connection:
        busy = connection.execute(select(
            exists().where(Inbound.status == "pending"),
            exists().where(Post.status == "pending"),
            exists().where(Deadline.status == "pending", Deadline.due_at <= now),
        )).one()
    return None if any(busy) else now


def compile_installed() -> None:
    """Compile dealer's modules as pip does on install (an editable install is not compiled)."""
    package = Path(dealer.__file__).parent
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPYCACHEPREFIX"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], env=env, check=True)


def run(attack: Attack, progress: IO[str] | None = None) -> Figures:
    """Set up, attack, drain and audit (the module's docstring); return the figures."""
    rng = random.Random(attack.seed)
    root = attack.root
    inbox, outbox = root / "inbox", root / "outbox"
    for folder in (inbox, outbox):
        folder.mkdir(parents=True, exist_ok=True)
    engine = make_engine(attack.database_url)
    postgres = engine.dialect.name == "postgresql"
    figures = Figures(seed=attack.seed, replicas=attack.replicas,
                      backend=make_url(attack.database_url).get_backend_name())
    # Enough rounds for the games to outlast the attack: a random life lasts half the
    # longest on average, a named one about half its limit.
    mean_life = (attack.random_share * (attack.shortest_random_life + attack.longest_random_life) / 2
                 + (1 - attack.random_share) * attack.named_life_limit / 2)
    expected = attack.kills / attack.replicas * (mean_life + 0.1) + 10
    rounds = attack.rounds or max(2, min(100, math.ceil(expected / attack.round_length)))
    table = set_up(engine, attack, rounds)
    send_log = root / "sends.log"
    pass_log = root / "passes.log"
    if attack.exec_lives:
        compile_installed()
    server = ForkServer(exec_lives=attack.exec_lives)
    replicas = []
    for index in range(attack.replicas):
        home = root / f"replica-{index}"
        home.mkdir(exist_ok=True)
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("DEALER_", "PG"))}
        env.update({
            "DEALER_HOME": str(home),
            "DEALER_DATABASE_URL": attack.database_url,
            "DEALER_INBOX": f"dir:{inbox}",
            "DEALER_PUBLISH": f"dir:{outbox}",
            "DEALER_POLL_INTERVAL": str(attack.poll_interval),
            "DEALER_DEADLINE_OVERRIDES": "",
            "PGAPPNAME": APPLICATION,
            "FAULTRUN_SEND_LOG": str(send_log),
            "FAULTRUN_PASS_LOG": str(pass_log),
        })
        if attack.exec_lives:
            # Started as an installed dealer is: its modules compiled before the first life
            # (compile_installed), read from beside the sources as the libraries' are.
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env.pop("PYTHONPYCACHEPREFIX", None)
        replicas.append(Replica(index, attack, env, root / f"replica-{index}.log", server,
                                random.Random(rng.random())))
    feeder = Feeder(inbox, table, attack.message_rate, rng.randrange(2**32))
    disconnector = (Disconnector(engine, attack.disconnect_every, rng.randrange(2**32), send_log)
                    if postgres and attack.disconnect_every else None)
    began = time.monotonic()
    try:
        feeder.start()
        if disconnector:
            disconnector.start()
        while figures.kills < attack.kills:
            for replica in replicas:
                replica.watch(figures, attacking=True)
            server.wait(timeout=0.01)
        feeder.halt.set()
        feeder.join()
        if disconnector:
            disconnector.halt.set()
            disconnector.join()
            figures.disconnects = disconnector.cut
        for replica in replicas:
            replica.end_attack(figures)
        if progress:
            print(f"attack over after {time.monotonic() - began:.1f} s: {figures.kills} kills; "
                  "draining", file=progress)
        drained = time.monotonic() + attack.drain_limit
        while True:
            for replica in replicas:
                replica.watch(figures, attacking=False)
            settled = _settled(engine, inbox)
            if settled:
                break
            if time.monotonic() > drained:
                figures.problems.append(f"not settled {attack.drain_limit:.0f} s after the attack")
                settled = utcnow()
                break
            server.wait(timeout=0.05)
    finally:
        feeder.halt.set()
        if disconnector:
            disconnector.halt.set()
        for replica in replicas:
            replica.stop()
        server.close()
    figures.duration = time.monotonic() - began
    lives = [life for replica in replicas for life in replica.lives]
    figures.lives = len(lives)
    _count_passes(pass_log, lives, figures)
    for replica in replicas:
        figures.exit_reasons.update(_exit_reasons(replica.log, replica.lives))
        figures.deadlocks += _count(replica.log, "deadlock detected")
    audit(engine, root, feeder.written, table, lives, settled, figures)
    engine.dispose()
    return figures


def verdict(figures: Any) -> int:
    """Print a run's figures and PASS or FAIL; the exit status: 0 when no problem was found."""
    print("\n".join(figures.lines()))
    print("PASS" if figures.ok else "FAIL")
    return 0 if figures.ok else 1


@dataclass
class Loop:
    """A life's loop, from ``faults/daemon.py``'s pass log: when it began (its start-up
    over; None if it never did) and when each turn of it ended (Unix times)."""

    started: float | None = None
    passes: list[float] = field(default_factory=list)


def read_passes(pass_log: Path) -> dict[str, Loop]:
    """Each life's loop by pid (``PID started TIME`` as its loop begins, ``PID TIME`` after
    each turn)."""
    loops: dict[str, Loop] = defaultdict(Loop)
    lines = pass_log.read_text(encoding="utf-8").splitlines() if pass_log.exists() else []
    for line in lines:
        words = line.split()
        if len(words) == 3 and words[1] == "started":
            loops[words[0]].started = float(words[2])
        elif len(words) == 2 and words[0].isdigit():
            loops[words[0]].passes.append(float(words[1]))
    return dict(loops)


def _count_passes(pass_log: Path, lives: list[Life], figures: Figures) -> None:
    """How many lives killed during the attack got through their start-up and how many
    completed a pass, and how many passes they completed (:func:`read_passes`)."""
    loops = read_passes(pass_log)
    passes = Counter({pid: len(loop.passes) for pid, loop in loops.items()})
    started = {pid for pid, loop in loops.items() if loop.started is not None}
    killed = [str(life.pid) for life in lives if life.end in ("named", "random")]
    figures.killed_with_pass = sum(1 for pid in killed if passes[pid])
    figures.killed_passes = sum(passes[pid] for pid in killed)
    figures.killed_started = sum(1 for pid in killed if pid in started)
    figures.started_with_pass = sum(1 for pid in killed if pid in started and passes[pid])


def _count(log: Path, needle: str) -> int:
    return log.read_text(encoding="utf-8", errors="replace").lower().count(needle)


def _exit_reasons(log: Path, lives: list[Life]) -> Counter[str]:
    """For each life of ``log`` that ended on its own, the last error line it logged."""
    exited = {n for n, life in enumerate(lives, 1) if life.end.startswith("exit")}
    reasons: Counter[str] = Counter()
    life, error = 0, None
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines() + ["=== faultrun: end"]:
        marker = re.match(r"=== faultrun: .* life (\d+),", line)
        if line.startswith("=== faultrun:"):
            if life in exited:
                reasons[error or "no error logged"] += 1
            life, error = (int(marker.group(1)) if marker else 0), None
        elif re.match(r"^([\w.]+(Error|Exception|Exit)\b|Error: )", line):  # a traceback's, click's
            error = line[:160]
    return reasons


# -- the books ---------------------------------------------------------------------------------


def audit(engine: Engine, root: Path, written: list[str], table: Table, lives: list[Life],
          settled: datetime, figures: Figures) -> None:
    """Check the store, the inbox, the outbox and the send log (the module's docstring);
    every deadline due by ``settled`` (when the drain found nothing left to do) must have
    fired."""
    problems = figures.problems
    figures.messages = len(written)
    _audit_inbox(engine, root / "inbox", written, figures)
    _audit_posts(engine, root / "outbox", root / "sends.log", lives, settled, figures)
    _audit_deadlines(engine, settled, figures)
    _audit_ledger(engine, table, figures)
    with session_factory(engine)() as session:
        for game_id, _, _ in table.games:
            report = replay_game(session, game_id)
            if not report.ok:
                problems.append(f"{game_id}: the replay differs from the store: {report.difference}")


def _audit_inbox(engine: Engine, inbox: Path, written: list[str], figures: Figures) -> None:
    problems = figures.problems
    left = sorted(p.name for p in inbox.glob("*.json"))
    if left:
        problems.append(f"{len(left)} inbox file(s) never taken, e.g. {left[:3]}")
    moved = Counter(p.stem for p in (inbox / "processed").glob("*.json"))
    moved.update(p.stem for p in (inbox / "rejected").glob("*.json"))
    wrong = [i for i in written if moved[i] != 1]
    if wrong:
        problems.append(f"{len(wrong)} inbox file(s) not moved exactly once, e.g. "
                        f"{[(i, moved[i]) for i in wrong[:3]]}")
    with engine.connect() as connection:
        rows = connection.execute(
            select(Inbound.external_id, Inbound.status).where(Inbound.source == "dir")).all()
    stored = Counter(external_id for external_id, _ in rows)
    not_once = [i for i in written if stored[i] != 1]
    if not_once:
        problems.append(f"{len(not_once)} message(s) not stored exactly once, e.g. "
                        f"{[(i, stored[i]) for i in not_once[:3]]}")
    strangers = set(stored) - set(written)
    if strangers:
        problems.append(f"{len(strangers)} stored message(s) nobody wrote: {sorted(strangers)[:3]}")
    figures.outcomes = Counter(status for _, status in rows)
    for status in ("pending", "failed"):
        if figures.outcomes[status]:
            problems.append(f"{figures.outcomes[status]} message(s) left {status}")


def _audit_posts(engine: Engine, outbox: Path, send_log: Path, lives: list[Life],
                 settled: datetime, figures: Figures, elsewhere: frozenset[int] = frozenset()) -> None:
    """The posts against the directory outbox and the send log; ``elsewhere``: the posts a
    route sent to another platform, whose books are that platform's (not in the outbox)."""
    problems = figures.problems
    with engine.connect() as connection:
        posts = connection.execute(select(Post.id, Post.key, Post.status, Post.game_id, Post.kind)).all()
        # A deadline that fell due after the drain settled may have queued posts that the
        # daemon, stopped after that step, never sent: they are the next pass's, not lost.
        later = set(connection.execute(select(Post.id).where(
            Post.status == "pending", Post.created_at > settled)).scalars())
        resolved = Counter(connection.execute(
            select(Event.game_id).where(Event.type == "round.resolved")).scalars())
        finished = Counter(connection.execute(
            select(Event.game_id).where(Event.type == "game.finished")).scalars())
    figures.posts = len(posts)
    figures.rounds_resolved = sum(resolved.values())
    figures.games_finished = sum(finished.values())
    undelivered = [(key, status) for i, key, status, _, _ in posts
                   if status != "delivered" and i not in later]
    if undelivered:
        problems.append(f"{len(undelivered)} post(s) not delivered, e.g. {undelivered[:3]}")
    files: dict[int, list[str]] = defaultdict(list)
    for path in outbox.glob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        files[data["id"]].append(data["key"])
    by_id = {post_id: key for post_id, key, _, _, _ in posts
             if post_id not in later and post_id not in elsewhere}
    missing = [key for post_id, key in by_id.items() if files.get(post_id) != [key]]
    figures.missing = len(missing)
    if missing:
        problems.append(f"{len(missing)} post(s) not in the outbox as exactly one file, e.g. {missing[:3]}")
    strays = sorted(set(files) - set(by_id))
    if strays:
        problems.append(f"{len(strays)} outbox file(s) for no queued post: {strays[:3]}")
    for kind, counts in (("round_result", resolved), ("final_result", finished)):
        posted = Counter(game for _, _, _, game, k in posts if k == kind)
        if posted != counts:
            problems.append(f"{kind} posts {dict(posted)} do not match the history {dict(counts)}")
    lines = [line.split(" ", 2) for line in send_log.read_text(encoding="utf-8").splitlines()]
    dead = {str(life.pid) for life in lives if life.died}
    sends = resends(lines, dead)
    figures.sends = sends.sends
    figures.resends_after_kill = sends.after_kill
    figures.resends_after_cut = sends.after_rollback
    figures.doubles = len(sends.doubles)
    if sends.doubles:
        problems.append(f"{len(sends.doubles)} post(s) sent twice, e.g. {sends.doubles[:3]}")
    never = sorted(set(by_id.values()) - sends.keys)
    if never:
        problems.append(f"{len(never)} post(s) marked delivered but never sent, e.g. {never[:3]}")


COMMITTED, ROLLED_BACK = "committed", "rolled back"
"""The marks of a delivery batch's end in the send log (``PID - MARK``: faults/daemon.py)."""


@dataclass
class Sends:
    """The send log read (:func:`resends`)."""

    sends: int = 0
    after_kill: int = 0
    """Sends repeated after one whose life died before its batch's end (a kill)."""
    after_rollback: int = 0
    """Sends repeated after (or before) one whose batch rolled back (a cut connection)."""
    doubles: list[str] = field(default_factory=list)
    """The keys of the posts sent in two batches that both committed."""
    keys: set[str] = field(default_factory=set)


def resends(lines: list[list[str]], dead: set[str]) -> Sends:
    """Read the send log's ``lines`` (``PID POST-ID KEY``, ``PID - MARK``, ``cut - -``): a post
    may be sent in any number of batches that did not commit, and in at most one that did. A
    send's batch ends with its sender's next mark: ``committed``; ``rolled back`` (delivery
    failed under it: a cut connection, whose locks went at once, so the other replica may
    have claimed and sent the post before or after this send, while its sender learnt of the
    cut only at its next statement); or none when its sender died first (in ``dead``:
    killed). A send with no mark whose sender did not die counts as committed (the run
    stopped it cleanly)."""
    fates: dict[int, str | None] = {}
    open_sends: dict[str, list[int]] = defaultdict(list)
    for n, (pid, post_id, what) in enumerate(lines):
        if pid == CUT:
            continue
        if post_id != "-":
            open_sends[pid].append(n)
            fates[n] = None
            continue
        for m in open_sends.pop(pid, []):
            fates[m] = what
    by_key: dict[str, list[int]] = defaultdict(list)
    for n in sorted(fates):
        by_key[lines[n][2]].append(n)
    out = Sends(sends=len(fates), keys=set(by_key))
    for key, sent in by_key.items():
        undone = [n for n in sent if fates[n] == ROLLED_BACK or (fates[n] is None and lines[n][0] in dead)]
        if len(sent) - len(undone) > 1:
            out.doubles.append(key)
        # Every send but one is a repeat; with none committed, the last undone one stands.
        for n in undone[:len(sent) - 1]:
            if fates[n] == ROLLED_BACK:
                out.after_rollback += 1
            else:
                out.after_kill += 1
    return out


def _audit_deadlines(engine: Engine, settled: datetime, figures: Any, *, once: bool = True) -> None:
    """Every deadline due by ``settled`` fired, not early, each game's in the order they fell
    due, as its history says; with ``once``, no name fired twice (a race's ``idle`` may come
    back: the season passes ``once=False``)."""
    misfires: list[str] = []
    with engine.connect() as connection:
        rows = connection.execute(
            select(Deadline.game_id, Deadline.name, Deadline.due_at, Deadline.status,
                   Deadline.fired_at).order_by(Deadline.game_id, Deadline.due_at, Deadline.id)).all()
        fired_events = connection.execute(
            select(Event.game_id, Event.at, Event.data)
            .where(Event.type == "deadline.fired").order_by(Event.game_id, Event.seq)).all()
    history: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for game_id, at, data in fired_events:
        history[game_id].append((data["deadline"], at))
    fired: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for game_id, name, due_at, status, fired_at in rows:
        if status == "pending" and due_at <= settled:
            misfires.append(f"{game_id}: {name} due {due_at} never fired")
        if status != "fired":
            continue
        fired[game_id].append((name, due_at))
        if fired_at is None or fired_at < due_at:
            misfires.append(f"{game_id}: {name} due {due_at} fired early, at {fired_at}")
    for game_id in set(fired) | set(history):
        steps = history[game_id]
        if steps != fired[game_id]:
            misfires.append(f"{game_id}: deadlines fired {_names(fired[game_id])} but the history "
                            f"says {_names(steps)}")
        if [at for _, at in steps] != sorted(at for _, at in steps):
            misfires.append(f"{game_id}: deadlines fired out of order: {_names(steps)}")
        if once:
            names = Counter(name for name, _ in steps)
            misfires += [f"{game_id}: {name} fired {n} times" for name, n in names.items() if n > 1]
    figures.deadlines_fired = sum(len(v) for v in fired.values())
    figures.misfires = len(misfires)
    figures.problems += misfires


def _names(steps: list[tuple[str, Any]]) -> str:
    return ", ".join(f"{name}@{at:%H:%M:%S.%f}" for name, at in steps[:12]) + (
        " ..." if len(steps) > 12 else "")


def _audit_ledger(engine: Engine, table: Table, figures: Figures) -> None:
    problems = figures.problems
    with engine.connect() as connection:
        holdings = connection.execute(select(Holding.account, Holding.item, Holding.amount)).all()
        entries = connection.execute(
            select(LedgerEntry.source, LedgerEntry.target, LedgerEntry.item, LedgerEntry.amount)).all()
    totals: Counter[str] = Counter()
    held: Counter[tuple[str, str]] = Counter()
    for account, item, amount in holdings:
        totals[item] += amount
        held[(account, item)] += amount
        if amount < 0 and account != MINT:
            problems.append(f"ledger: {account} holds {amount} {item}")
    unbalanced = {item: total for item, total in totals.items() if total != 0}
    if unbalanced:
        problems.append(f"ledger: items do not sum to zero over all accounts: {unbalanced}")
    moved: Counter[tuple[str, str]] = Counter()
    for source, target, item, amount in entries:
        moved[(source, item)] -= amount
        moved[(target, item)] += amount
        if MINT not in (source, target) and scope_of(source) != scope_of(target):
            problems.append(f"ledger: {amount} {item} crossed scopes, {source} -> {target}")
    differ = {k: (held[k], moved[k]) for k in set(held) | set(moved) if held[k] != moved[k]}
    if differ:
        problems.append(f"ledger: holdings differ from the entries: {dict(list(differ.items())[:3])}")
    # The chips handed out are the global wallets'; a Hall cycle mints its own (GH-1).
    chips = sum(amount for (account, item), amount in held.items()
                if item == CHIPS and account != MINT and scope_of(account) is None)
    if chips != table.chips:
        problems.append(f"ledger: {chips} chips held, {table.chips} handed out")
