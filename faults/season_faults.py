"""The season's faults, planned from its seed: daemons killed all season (faultlib's replicas:
at named fault points and at random moments), on Postgres their connections cut every few
seconds (faultlib's disconnector), the publisher out once for a fifth of a day (every send
of the directory publisher fails while the flag file ``outage`` exists: faults/daemon.py;
the posts wait and are sent again after their backoff), and a day of downtime with no daemon at all while the
players go on writing (the directory inbox fills up; the webhook's sender retries); and
admins running ``dealer deadline`` on running roulette games (a deadline extended, one
made due now, a game paused and resumed a quarter day later) through the overrides file
the daemons share."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from sqlalchemy import select
from sqlalchemy.engine import Engine

import faultlib
from dealer.clock import utcnow
from dealer.store.models import Deadline, Event, Game


class Faults:
    """When each fault happens, and doing it at its time (``step`` from the season's loop)."""

    def __init__(self, season: Any, engine: Engine, root: Path, send_log: Path, rng: random.Random):
        self.season = season
        self.engine = engine
        self.root = root
        self.send_log = send_log
        self.flag = root / "outage"
        self.rng = rng
        day = season.day_seconds
        self.downtime: tuple[float, float] | None = None
        if season.downtime > 0 and season.days >= 2:
            first = rng.uniform(0.5, max(0.5, season.days - season.downtime - 0.5)) * day
            self.downtime = (first, first + season.downtime * day)
        self.outage: tuple[float, float] | None = None
        if season.outage:
            for _ in range(100):
                first = rng.uniform(0.2, max(0.2, season.days - 0.4)) * day
                window = (first, first + 0.2 * day)
                if self.downtime is None or window[1] < self.downtime[0] or window[0] > self.downtime[1]:
                    self.outage = window
                    break
        self.down_since: datetime | None = None
        self.down_until: datetime | None = None
        self.out_since: datetime | None = None
        self.out_until: datetime | None = None
        self.disconnector: faultlib.Disconnector | None = None
        self.cut = 0
        self.overrides = root / "overrides.env"
        self.admin: list[tuple[float, str]] = []
        if season.admin:
            length = season.days * day
            # The resume comes a quarter day after the pause was done (see _admin).
            self.admin = [(0.3 * length, "extend"), (0.45 * length, "now"), (0.6 * length, "pause")]
        self.paused: str | None = None
        self.commands: list[str] = []
        self.refused: list[str] = []
        self.watch: Callable[[], None] = lambda: None
        """What the season's loop does while an admin's command runs (:meth:`step`)."""
        self.skipped: list[str] = []
        """Commands refused because their game finished after it was picked: nothing done."""

    def attack(self) -> faultlib.Attack:
        """How the replicas' lives end while the season runs (faultlib's knobs)."""
        return faultlib.Attack(
            database_url=self.season.database_url, root=self.root,
            random_share=0.5, shortest_random_life=0.5,
            longest_random_life=max(1.0, self.season.day_seconds / 3), named_life_limit=2.5,
        )

    def start(self, began: float, postgres: bool) -> None:
        if postgres and self.season.disconnects:
            self.disconnector = faultlib.Disconnector(
                self.engine, max(1.0, self.season.day_seconds / 4), self.rng.randrange(2**32),
                self.send_log)
            self.disconnector.start()

    def step(self, elapsed: float, replicas: list[faultlib.Replica], kills: faultlib.Figures,
             running: list[str], watch: Callable[[], None] = lambda: None) -> bool:
        """Begin or end the outage and the downtime, run the admins' commands on ``running``
        roulette games, as their time comes (calling ``watch`` while one runs: the replicas'
        lives are restarted and killed meanwhile, as a supervisor would); True while down."""
        self.watch = watch
        if self.downtime and self.down_since is not None and self.down_until is None \
                and elapsed >= self.downtime[1]:
            self.down_until = utcnow()  # over before an admin's deferred command runs
        if self.admin and self.admin[0][0] <= elapsed and not self._down(elapsed):
            _, what = self.admin.pop(0)
            entered = time.monotonic()
            if not self._admin(what, running, elapsed):
                # No game to take it now (all finished, not started yet, or the daemons down
                # so none started): the admin tries again a little later.
                self.admin.insert(0, (elapsed + self.season.day_seconds / 20, what))
            # An admin's command may take seconds (it waits for a daemon to see a pause): the
            # outage and the downtime are judged at the time now, or a season whose loop ends
            # right after would never begin an outage due meanwhile.
            elapsed += time.monotonic() - entered
        if self.outage:
            first, last = self.outage
            if first <= elapsed and self.out_since is None:
                # Begun late when the loop was held up (an admin's command): as long all the same.
                self.outage = (elapsed, elapsed + last - first)
                self.flag.write_text("out\n", encoding="utf-8")
                self.out_since = utcnow()
            elif elapsed >= last and self.out_since is not None and self.out_until is None:
                self._outage_over()
        if not self.downtime:
            return False
        first, last = self.downtime
        if first <= elapsed < last:
            if self.down_since is None:
                self.down_since = utcnow()
                for replica in replicas:
                    replica.end_attack(kills)  # killed now, not restarted until it is over
            return True
        if elapsed >= last and self.down_since is not None and self.down_until is None:
            self.down_until = utcnow()
        return False

    def _admin(self, what: str, running: list[str], elapsed: float) -> bool:
        """``dealer deadline WHAT`` on a running roulette game (resume: the paused one); False
        if no game could take it now."""
        if what == "resume":
            if self.paused is not None:
                if not self._applied(self.paused, "paused"):
                    return False  # no daemon has seen the pause yet (one killed, restarting)
                game, self.paused = self.paused, None
                self._dealer("resume", game)
            return True
        tried: set[str] = set()
        while True:
            games = [g for g in self.candidates(running) if g not in tried]
            if not games:
                return False
            game = self.rng.choice(games)
            tried.add(game)
            if what == "extend":
                done = self._dealer("extend", game, f"+{max(1, round(self.season.day_seconds / 8))}s",
                                    unless_finished=game)
            elif what == "now":
                done = self._dealer("now", game, unless_finished=game)
            else:
                done = self._dealer("pause", game, unless_finished=game)
                if done:
                    self.paused = game
                    self.admin.append((elapsed + 0.25 * self.season.day_seconds, "resume"))
            if done:
                return True

    def candidates(self, running: list[str]) -> list[str]:
        """Of ``running``, the games the store shows running with a pending deadline and the
        fewest rounds resolved: those furthest from their end, which an admin's command cannot
        miss by their finishing first (unless the daemons are slower than a round)."""
        if not running:
            return []
        with self.engine.connect() as connection:
            live = set(connection.execute(
                select(Game.id).where(Game.id.in_(running), Game.status == "running",
                                      Game.id.in_(select(Deadline.game_id).where(
                                          Deadline.status == "pending")))).scalars())
            resolved = Counter(connection.execute(
                select(Event.game_id).where(Event.game_id.in_(live),
                                            Event.type == "round.resolved")).scalars())
        if not live:
            return []
        fewest = min(resolved[g] for g in live)
        return sorted(g for g in live if resolved[g] == fewest)

    def _down(self, elapsed: float) -> bool:
        """Whether ``elapsed`` is in the downtime: an admin waits for a daemon to see the command."""
        return self.downtime is not None and self.downtime[0] <= elapsed < self.downtime[1]

    def _applied(self, game: str, action: str) -> bool:
        with self.engine.connect() as connection:
            data = connection.execute(select(Event.data).where(
                Event.game_id == game, Event.type == "admin.override")).scalars().all()
        return any(d.get("action") == action for d in data)

    def _finished(self, game: str) -> bool:
        with self.engine.connect() as connection:
            return connection.execute(select(Game.status).where(Game.id == game)).scalar() == "finished"

    def _dealer(self, *args: str, unless_finished: str | None = None) -> bool:
        """Run ``dealer deadline ARGS`` as an admin would, on the daemons' overrides file;
        True if it ran. A refusal because game ``unless_finished`` finished in between (after
        it was picked) is no problem, only nothing done: False."""
        env = {key: value for key, value in os.environ.items() if not key.startswith("DEALER_")}
        env.update({"DEALER_HOME": str(self.root / "admin"),
                    "DEALER_DATABASE_URL": self.season.database_url,
                    "DEALER_OVERRIDES_FILE": str(self.overrides)})
        # Not subprocess.run: the command takes seconds on a loaded machine (a Python start),
        # and the season's loop would restart no killed life meanwhile (after the downtime,
        # none: every deadline due in it fired that much later).
        with tempfile.TemporaryFile("w+") as output, subprocess.Popen(
                [sys.executable, "-m", "dealer.cli", "deadline", *args], env=env,
                stdout=output, stderr=output, text=True) as process:
            limit = time.monotonic() + 120
            while process.poll() is None and time.monotonic() < limit:
                self.watch()
                time.sleep(0.02)
            if process.poll() is None:
                process.kill()
            process.wait()
            output.seek(0)
            out = err = output.read()
        if process.returncode == -9:
            err += "\n(no answer in 120 s: killed)"
        done = subprocess.CompletedProcess(process.args, process.returncode, out, err)
        if done.returncode != 0 and unless_finished and self._finished(unless_finished):
            self.skipped.append(" ".join(args))
            return False
        self.commands.append(" ".join(args))
        if done.returncode != 0:
            self.refused.append(f"dealer deadline {' '.join(args)}: {done.stderr.strip()[-300:]}")
        return done.returncode == 0

    def _outage_over(self) -> None:
        self.flag.unlink()
        self.out_until = utcnow()

    def stop(self, kills: faultlib.Figures) -> None:
        """End what is still going on (the outage, the disconnector)."""
        if self.out_since is not None and self.out_until is None:
            self._outage_over()
        if self.down_since is not None and self.down_until is None:
            self.down_until = utcnow()
        if self.paused is not None:
            game, self.paused = self.paused, None
            self._dealer("resume", game)
        self.refused += [f"dealer deadline {what}: no running roulette game with rounds to go "
                         "until the season's end" for _, what in self.admin if what != "resume"]
        self.admin = []
        if self.disconnector is not None:
            self.disconnector.halt.set()
            self.disconnector.join()
            self.cut = self.disconnector.cut
            kills.disconnects = self.cut
            self.disconnector = None

    def downtime_seconds(self) -> float:
        """How long the daemons were all down (0 without a downtime)."""
        if self.down_since is None or self.down_until is None:
            return 0.0
        return (self.down_until - self.down_since).total_seconds()

    def figures(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["downtime"] = f"{self.downtime_seconds():.1f} s" if self.down_since else "none"
        if self.out_since and self.out_until:
            out["publisher outage"] = f"{(self.out_until - self.out_since).total_seconds():.1f} s"
        else:
            out["publisher outage"] = "none"
        out["connections cut"] = self.cut
        out["admin commands"] = "; ".join(self.commands) or "none"
        if self.skipped:
            out["admin commands on a game finished in between"] = "; ".join(self.skipped)
        return out
