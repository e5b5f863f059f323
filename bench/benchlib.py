"""Shared set-up for the benchmarks: a throw-away store, a directory inbox/outbox, a Dealer.

Not a test helper and not part of the package: the scripts in ``bench/`` import it by
file name (``python bench/deadlines.py`` puts ``bench/`` on ``sys.path``).

The store is a temporary SQLite file unless ``--database-url`` names another. A Postgres
URL is used only when given explicitly, and then inside a schema of its own
(``dealer_bench_<pid>``, selected through ``search_path``) that is dropped afterwards, so
the benchmark neither sees nor disturbs what the test suite keeps in ``public``.
"""

from __future__ import annotations

import argparse
import atexit
import cProfile
import contextlib
import io
import json
import os
import pstats
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

from sqlalchemy import event, func, select, text
from sqlalchemy.engine import make_url

from dealer.clock import iso
from dealer.shell.passes import Dealer, PassReport
from dealer.shell.admin import add_player, create_game
from dealer.settings import Settings
from dealer.store.db import make_engine, migrate, normalise_url
from dealer.store.models import Deadline, Inbound, Post

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
"""Every benchmark game is created and starts at this instant (the clock is controlled)."""

DAY = timedelta(hours=24)
STARTING_CHIPS = 1000


LAYOUTS = [(25, 15), (30, 10), (35, 5), (28, 12)]
WINNING = ["gold", "silver", "black"]
BETS = [
    "bet gold 30 silver 10",
    "bet gold 40",
    "bet silver 25 gold 15",
    "bet black 40",
    "bet gold 20 black 20",
    "bet silver 30 black 10",
]
"""Round-1 bets of 40 chips (SR-4), one chosen per player with the fair source."""


def prepare_line(rng: Any) -> str:
    """A valid roulette preparation (SR-2), chosen with the fair source ``rng``."""
    gold, silver = rng.choice(LAYOUTS)
    return f"prepare {rng.choice(WINNING)} gold {gold} silver {silver}"


def common_arguments(parser: argparse.ArgumentParser) -> None:
    """:func:`store_arguments`, ``--profile``, ``--sample``, ``--top``, ``--sql-stats``."""
    store_arguments(parser)
    parser.add_argument(
        "--profile", metavar="FILE",
        help="also run the timed part under cProfile and write the stats to FILE "
        "(the profiled run is the timed run: expect it to be slower)",
    )
    parser.add_argument(
        "--sample", action="store_true",
        help="also sample the timed pass's stack every 1 ms of CPU and print where the "
        "samples fall (inclusive and self %%): unlike cProfile, this does not inflate "
        "call-heavy code such as SQLAlchemy's or copy.deepcopy",
    )
    parser.add_argument("--top", type=int, default=35, help="with --profile/--sample: rows to print")
    parser.add_argument(
        "--sql-stats", action="store_true",
        help="count the SQL statements the timed pass sends, by kind and by text",
    )


def store_arguments(parser: argparse.ArgumentParser) -> None:
    """``--database-url``, ``--publisher``, ``--keep``: the store and where posts go."""
    parser.add_argument(
        "--database-url",
        help="SQLAlchemy URL of the store (default: a temporary SQLite file). A Postgres URL "
        "is used in a schema of its own, dropped at the end.",
    )
    parser.add_argument(
        "--publisher", choices=("dir", "memory"), default="dir",
        help="where delivered posts go: a temporary directory outbox (default, as "
        "`dealer run --once` does) or an in-memory publisher",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary files/schema")


@dataclass
class Store:
    """A migrated, empty store and the temporary folder around it."""

    url: str
    root: Path
    keep: bool = False
    schema: str | None = None
    admin_url: str | None = None

    @classmethod
    def create(cls, database_url: str | None, keep: bool) -> "Store":
        root = Path(tempfile.mkdtemp(prefix="dealer-bench-"))
        if not database_url:
            store = cls(f"sqlite:///{root / 'dealer.db'}", root, keep)
        else:
            parsed = make_url(normalise_url(database_url))
            if parsed.get_backend_name() == "postgresql":
                schema = f"dealer_bench_{os.getpid()}"
                engine = make_engine(database_url)
                with engine.begin() as connection:
                    connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
                    connection.execute(text(f'CREATE SCHEMA "{schema}"'))
                engine.dispose()
                scoped = parsed.update_query_dict({"options": f"-csearch_path={schema}"})
                store = cls(
                    scoped.render_as_string(hide_password=False), root, keep,
                    schema=schema, admin_url=database_url,
                )
            else:
                store = cls(database_url, root, keep)
        engine = make_engine(store.url)
        migrate(engine)
        engine.dispose()
        return store

    def describe(self) -> str:
        shown = make_url(self.url).render_as_string(hide_password=True)
        return f"{shown}" + (f" (schema {self.schema})" if self.schema else "")

    def close(self) -> None:
        if self.keep:
            print(f"kept: {self.root}" + (f", schema {self.schema}" if self.schema else ""))
            return
        if self.schema and self.admin_url:
            engine = make_engine(self.admin_url)
            with engine.begin() as connection:
                connection.execute(text(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE'))
            engine.dispose()
        remove_at_exit(self.root)


_REMOVE_AT_EXIT: list[Path] = []


def remove_at_exit(folder: Path) -> None:
    """Delete ``folder`` (a run's store, inbox and outbox) when the script ends, not when
    its run does.

    A run leaves tens of thousands of files (40,000 inbox files and 20,000 posts at
    10,000 games). On a file system that keeps no journal (ext4 without one, as on the
    machines these figures come from) the kernel will not reuse an inode for a minute or
    more after its file is deleted, and checks each such inode in turn when it creates a
    file: right after a run's folder was deleted, the next run's files took 0.5-0.7 ms
    each to create instead of 0.02-0.07 ms, which put seconds of the clean-up into the
    next run's timed delivery. So every run of a ``--repeat`` set finds the file system
    as the first did; the folders go together at the end. Running the scripts back to
    back, give the file system a minute or two between them (bench/README.md).
    """
    if not _REMOVE_AT_EXIT:
        atexit.register(_remove_folders)
    _REMOVE_AT_EXIT.append(folder)


def _remove_folders() -> None:
    for folder in _REMOVE_AT_EXIT:
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Bench:
    """A Dealer on a fresh store with a directory inbox and a controlled clock."""

    store: Store
    publisher: str = "dir"
    now: datetime = T0
    dealer: Dealer = field(init=False)
    inbox_dir: Path = field(init=False)
    outbox_dir: Path = field(init=False)
    _n: int = 0

    def __post_init__(self) -> None:
        self.inbox_dir = self.store.root / "inbox"
        self.outbox_dir = self.store.root / "outbox"
        settings = Settings(
            home=str(self.store.root),
            database_url=self.store.url,
            inbox=f"dir:{self.inbox_dir}",
            publish=f"dir:{self.outbox_dir}" if self.publisher == "dir" else "memory",
            deadline_overrides="",
            _env_file=None,
        )
        self.dealer = Dealer(settings, clock=lambda: self.now)

    # -- set-up -------------------------------------------------------------------------

    def add_players(self, names: list[str], chips: int = STARTING_CHIPS, batch: int = 500) -> None:
        """Register ``names`` with ``chips`` each, through ``add_player``."""
        for i in range(0, len(names), batch):
            with self.dealer.sessions.begin() as session:
                for name in names[i:i + batch]:
                    add_player(session, name, self.now, chips=chips)

    def create_roulettes(
        self, pairs: list[tuple[str, str, str]], start: datetime = T0, batch: int = 100,
        settings: dict[str, str] | None = None,
    ) -> None:
        """``(game_id, player_a, player_b)`` games, all starting at ``start``."""
        for i in range(0, len(pairs), batch):
            with self.dealer.sessions.begin() as session:
                for game_id, a, b in pairs[i:i + batch]:
                    create_game(
                        session, "roulette", game_id, self.now, players=[a, b], start=start,
                        settings=settings,
                    )

    def prepared_games(
        self, count: int, rng: Any, start: datetime = T0
    ) -> tuple[list[tuple[str, str, str]], list[str]]:
        """Set up ``count`` roulettes up to round 1 (untimed): players, games created and
        starting at ``start`` (the clock set there), every preparation through the inbox,
        the preparation deadlines fired.

        Returns the ``(game_id, player_a, player_b)`` triples and the players.
        """
        self.now = start
        games = [(f"sr{i:04d}", f"p{2 * i:04d}", f"q{2 * i + 1:04d}") for i in range(count)]
        players = [name for _, a, b in games for name in (a, b)]
        with step(f"{len(players)} players"):
            self.add_players(players)
        with step(f"{count} games starting {start:%Y-%m-%dT%H:%MZ}"):
            self.create_roulettes(games, start=start)
        with step("preparations (inbox + pass)"):
            for i, name in enumerate(players):
                self.send(name, prepare_line(rng), start + timedelta(hours=1, seconds=i % 3600))
            report = self.run(start + timedelta(hours=2))
            assert report.messages == len(players), report.line()
        with step("preparation deadlines, round 1 opens (pass)"):
            report = self.run(start + DAY)
            # each game: reminder-preparation-6h, -1h and preparation
            assert report.deadlines == 3 * count, report.line()
        return games, players

    def round_one_eve(self, count: int, rng: Any) -> tuple[list[str], datetime]:
        """Set up ``count`` roulettes (:meth:`prepared_games`) up to 1 s before their
        round-1 deadline, all due at one instant: every player bets on the opponent's
        roulette and prepares the round-2 one, in one two-line message (one pass); the
        round-1 reminders fire and every post so far is delivered (one pass). What is left
        due is the N round-1 deadlines alone.

        Returns the players and the deadline's instant.
        """
        _, players = self.prepared_games(count, rng)
        with step("round-1 bets and round-2 preparations (inbox + pass)"):
            for i, name in enumerate(players):
                body = f"{rng.choice(BETS)}\n{prepare_line(rng)}"
                self.send(name, body, T0 + DAY + timedelta(hours=1, seconds=i % 3600))
            report = self.run(T0 + DAY + timedelta(hours=2))
            assert report.messages == len(players), report.line()
        deadline = T0 + 2 * DAY
        with step("round-1 reminders and delivery of everything so far (pass)"):
            report = self.run(deadline - timedelta(seconds=1))
            assert report.deadlines == 2 * count, report.line()
        return players, deadline

    def send(self, sender: str, body: str, at: datetime, **fields: Any) -> None:
        """Drop one message file into the directory inbox (as `dealer submit` would)."""
        self._n += 1
        ident = fields.pop("id", f"b{self._n:07d}")
        message = {"id": ident, "sender": sender, "channel": "pm", "body": body,
                   "sent_at": iso(at), **fields}
        (self.inbox_dir / f"{self._n:07d}-{ident}.json").write_text(
            json.dumps(message), encoding="utf-8"
        )

    def run(self, now: datetime) -> PassReport:
        """One untimed pass at ``now`` (set-up)."""
        self.now = now
        return self.dealer.run_pass(now)

    # -- what the store holds -------------------------------------------------------------

    def count(self, model: Any, *where: Any) -> int:
        with self.dealer.sessions() as session:
            return session.scalar(select(func.count()).select_from(model).where(*where)) or 0

    def posts(self, *where: Any) -> int:
        return self.count(Post, *where)

    def close(self) -> None:
        self.dealer.engine.dispose()
        self.dealer.reader.dispose()
        self.store.close()


@dataclass
class TimedPass:
    """One ``run_pass(now)`` with its stages timed (the stages are the pass's own methods)."""

    report: PassReport
    total: float
    cpu: float
    stages: dict[str, float]
    load: tuple[float, float, float]
    stages_cpu: dict[str, float] = field(default_factory=dict)
    """The CPU time of each stage (the machine may be shared: wall time then overstates)."""


class SqlCounter:
    """Counts the statements an engine sends (``before_cursor_execute``)."""

    def __init__(self, engine: Any):
        self.engine = engine
        self.kinds: Counter[str] = Counter()
        self.texts: Counter[str] = Counter()

    def __enter__(self) -> "SqlCounter":
        event.listen(self.engine, "before_cursor_execute", self._count)
        return self

    def __exit__(self, *exc: Any) -> None:
        event.remove(self.engine, "before_cursor_execute", self._count)

    def _count(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        words = statement.split()
        self.kinds[words[0].upper() if words else "?"] += 1
        self.texts[" ".join(words)[:150]] += 1

    def print(self, per: int, unit: str, top: int = 25) -> None:
        total = sum(self.kinds.values())
        print(f"sql statements:   {total} ({total / max(per, 1):.1f} per {unit}): "
              + ", ".join(f"{k} {v}" for k, v in self.kinds.most_common()))
        for text_, n in self.texts.most_common(top):
            print(f"  {n:7d} ({n / max(per, 1):5.2f}/{unit})  {text_}")


class Sampler:
    """A small statistical profiler: ``SIGPROF`` every millisecond of CPU time records the
    stack; functions are then ranked by the share of samples they (or their callees) were on.
    """

    ROOTS = (str(Path(sys.prefix) / "lib"), str(Path(__file__).resolve().parent.parent), sys.base_prefix)

    def __init__(self) -> None:
        self.inclusive: Counter[str] = Counter()
        self.own: Counter[str] = Counter()
        self.samples = 0

    def _label(self, code: Any) -> str:
        name = code.co_filename
        for root in self.ROOTS:
            if name.startswith(root):
                name = name[len(root):].lstrip("/")
                name = name.split("site-packages/", 1)[-1]
                break
        return f"{name}:{code.co_firstlineno}({code.co_name})"

    def _tick(self, _signum: int, frame: Any) -> None:
        self.samples += 1
        seen: set[str] = set()
        if frame is not None:
            self.own[self._label(frame.f_code)] += 1
        while frame is not None:
            label = self._label(frame.f_code)
            if label not in seen:
                seen.add(label)
                self.inclusive[label] += 1
            frame = frame.f_back

    def __enter__(self) -> "Sampler":
        signal.signal(signal.SIGPROF, self._tick)
        signal.setitimer(signal.ITIMER_PROF, 0.001, 0.001)
        return self

    def __exit__(self, *exc: Any) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        signal.signal(signal.SIGPROF, signal.SIG_DFL)

    def print(self, top: int) -> None:
        n = max(self.samples, 1)
        print(f"--- {self.samples} CPU samples of the timed pass: inclusive share, dealer code ---")
        shown = 0
        for label, count in self.inclusive.most_common():
            if label.startswith("dealer/"):
                print(f"{100 * count / n:6.1f}%  {label}")
                shown += 1
                if shown >= top:
                    break
        print(f"--- inclusive share, everything (top {top}) ---")
        for label, count in self.inclusive.most_common(top):
            print(f"{100 * count / n:6.1f}%  {label}")
        print(f"--- self share (top {top}) ---")
        for label, count in self.own.most_common(top):
            print(f"{100 * count / n:6.1f}%  {label}")


def timed_pass(
    bench: Bench, now: datetime, profile: str | None = None, top: int = 35,
    sql: SqlCounter | None = None, sample: bool = False,
) -> TimedPass:
    """Run exactly one ``Dealer.run_pass(now)``, timing it and each of its stages."""
    dealer = bench.dealer
    stages: dict[str, float] = {}
    stages_cpu: dict[str, float] = {}
    originals = {}
    for name in ("apply_overrides", "ingest", "process_due", "deliver"):
        original = getattr(dealer, name, None)
        if original is None:  # a stage the Dealer no longer has: time the pass only
            continue
        originals[name] = original

        def wrapped(*args: Any, _name: str = name, _fn: Callable[..., Any] = original, **kw: Any) -> Any:
            began, cpu_began = time.perf_counter(), time.process_time()
            try:
                return _fn(*args, **kw)
            finally:
                stages[_name] = stages.get(_name, 0.0) + time.perf_counter() - began
                stages_cpu[_name] = stages_cpu.get(_name, 0.0) + time.process_time() - cpu_began

        setattr(dealer, name, wrapped)
    bench.now = now
    # CPU time, not wall time: the machine may be shared, and a profile of wall time
    # charges the time the process sat descheduled to whatever function was running.
    profiler = cProfile.Profile(time.process_time) if profile else None
    counting = sql if sql is not None else contextlib.nullcontext()
    sampler = Sampler() if sample else None
    try:
        with counting, (sampler or contextlib.nullcontext()):
            began, cpu_began = time.perf_counter(), time.process_time()
            if profiler:
                profiler.enable()
            report = dealer.run_pass(now)
            if profiler:
                profiler.disable()
            total = time.perf_counter() - began
            cpu = time.process_time() - cpu_began
        load = os.getloadavg()
    finally:
        for name in originals:
            delattr(dealer, name)  # the instance attribute shadowed the method
    if profiler and profile:
        profiler.dump_stats(profile)
        print_profile(profile, top)
    if sampler:
        sampler.print(top)
    return TimedPass(report, total, cpu, stages, load, stages_cpu)


def print_profile(path: str, top: int) -> None:
    out = io.StringIO()
    stats = pstats.Stats(path, stream=out)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    print(out.getvalue())


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def median(values: list[float]) -> float:
    """The middle value of the runs (of an even number, the upper of the middle two: use
    an odd ``--repeat``), which the targets are judged on."""
    return sorted(values)[len(values) // 2]


def spread(label: str, values: list[float], unit: str, digits: int = 2) -> str:
    """``label: min .., median .. (each run in order)``: a figure over ``--repeat`` runs."""
    ordered = sorted(values)
    each = ", ".join(f"{v:.{digits}f}" for v in values)
    return (f"{label + ':':17} min {ordered[0]:.{digits}f}{unit}, median {median(values):.{digits}f}{unit}"
            f"  ({each})")


def repeat_argument(parser: argparse.ArgumentParser) -> None:
    """``--repeat N``: independent runs (a fresh store each), min and median printed."""
    parser.add_argument("--repeat", type=int, default=3,
                        help="independent runs, each on a fresh store; min and median printed, "
                        "the target judged on the median (default 3)")


def stage_line(stages: dict[str, float]) -> str:
    return ", ".join(f"{name} {seconds:.2f} s" for name, seconds in stages.items())


def machine_line(timed: TimedPass) -> str:
    """Cores and load: figures taken on a busy machine are wall-clock pessimistic."""
    one, five, _ = timed.load
    return f"{os.cpu_count()} cores, load average {one:.2f} (1 min) {five:.2f} (5 min) after the pass"


def file_creation_probe(root: Path, count: int = 500) -> float:
    """Microseconds to create one empty file beside the outbox: ``count`` new files in a
    folder of their own under ``root`` (deleted with it when the script ends).

    On a quiet file system this is 20-70 µs here; for minutes after many files were
    deleted (another script's clean-up) it is 10-30x that (:func:`remove_at_exit`), and
    a burst's delivery, which creates a file a post, with it. Printed beside the timed
    pass so that such a run can be told apart."""
    probe = root / "file-creation-probe"
    probe.mkdir()
    folder = os.fspath(probe)
    began = time.perf_counter()
    for i in range(count):
        os.close(os.open(f"{folder}/{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    return (time.perf_counter() - began) / count * 1e6


@contextlib.contextmanager
def step(label: str) -> Iterator[None]:
    """Print how long a set-up step took (to stderr, so stdout holds the figures)."""
    began = time.perf_counter()
    print(f"set-up: {label} ...", end="", file=sys.stderr, flush=True)
    yield
    print(f" {time.perf_counter() - began:.1f} s", file=sys.stderr, flush=True)


__all__ = [
    "BETS", "Bench", "DAY", "Deadline", "Inbound", "Post", "SqlCounter", "Store", "T0", "TimedPass",
    "common_arguments", "file_creation_probe", "machine_line", "median", "repeat_argument", "spread", "stage_line",
    "step", "store_arguments", "timed_pass", "verdict",
]
