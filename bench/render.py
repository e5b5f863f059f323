"""Benchmark: rendering alone, the posts of a deadline burst and of a message pass replayed.

Not a target of its own: rendering is about a sixth of a fired deadline's CPU on SQLite
(bench/deadlines.py), and this script measures that part alone, so that a change to
``dealer/render.py`` can be judged on its own figure.

Set-up (untimed): ``--games`` Stationary Roulette games brought to the eve of their round-1
deadline as bench/deadlines.py does, then that deadline fired. Every render of two passes
is recorded (template, time, context): the round-1 bets (the players' confirmations and
replies) and the round-1 deadlines (round results and round starts).

Timed: each recording replayed ``--replays`` times in one process, every template compiled
first; CPU time per post, best and median of ``--repeat`` series. Each render's text is
checked against the one recorded, so a change that alters a post is caught here too.

    .venv/bin/python bench/render.py                 # 200 games, 5 replays, 5 series
    .venv/bin/python bench/render.py --games 50 --replays 3
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import BETS, DAY, T0, Bench, Store, median, prepare_line  # noqa: E402

from dealer import render as render_module  # noqa: E402
from dealer.fairness import FairSource  # noqa: E402

Call = tuple[tuple[Any, ...], str]
"""The arguments of one ``render._render`` call and the text it returned."""


def record(run: Callable[[], Any]) -> list[Call]:
    """Every render made while ``run()`` runs: its arguments (deep-copied, as they were
    at the render) and its text."""
    original = render_module._render
    calls: list[Call] = []

    def recording(*args: Any) -> str:
        text = original(*args)
        calls.append((copy.deepcopy(args), text))
        return text

    render_module._render = recording  # type: ignore[assignment]
    try:
        run()
    finally:
        render_module._render = original  # type: ignore[assignment]
    return calls


def replay(calls: list[Call], replays: int) -> float:
    """CPU seconds per render over ``replays`` replays of ``calls``; every text checked."""
    rendering = render_module._render
    for args, text in calls:  # compiled and checked once, untimed
        if rendering(*args) != text:
            raise SystemExit(f"a replayed render differs from the recorded one: {args[0]}")
    began = time.process_time()
    for _ in range(replays):
        for args, _text in calls:
            rendering(*args)
    return (time.process_time() - began) / (replays * len(calls))


def recorded(games: int) -> dict[str, list[Call]]:
    """The renders of a bets pass and of a deadline burst of ``games`` roulettes."""
    store = Store.create(None, keep=False)
    bench = Bench(store, publisher="memory")
    rng = FairSource("bench-20261201")  # every draw through the fair source (GH-40)
    try:
        _, players = bench.prepared_games(games, rng)
        for i, name in enumerate(players):  # as Bench.round_one_eve sends them
            bench.send(name, f"{rng.choice(BETS)}\n{prepare_line(rng)}", T0 + DAY + timedelta(hours=1, seconds=i))
        messages = record(lambda: bench.run(T0 + DAY + timedelta(hours=2)))
        bench.run(T0 + 2 * DAY - timedelta(seconds=1))  # the reminders, and delivery so far
        deadlines = record(lambda: bench.run(T0 + 2 * DAY))
    finally:
        bench.close()
    return {"message replies": messages, "deadline posts": deadlines}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=200, help="roulette games (default 200)")
    parser.add_argument("--replays", type=int, default=5, help="replays of a recording per series (default 5)")
    parser.add_argument("--repeat", type=int, default=5, help="series, alternating the recordings (default 5)")
    args = parser.parse_args(argv)
    recordings = recorded(args.games)
    figures: dict[str, list[float]] = {label: [] for label in recordings}
    for _ in range(args.repeat):
        for label, calls in recordings.items():
            figures[label].append(replay(calls, args.replays) * 1e6)
    print(f"dealer.render from {Path(render_module.__file__).resolve().parent.parent}")
    for label, values in figures.items():
        templates = sorted({args[0] for args, _ in recordings[label]})
        print(f"{label + ':':17} {len(recordings[label])} renders ({', '.join(templates)}): "
              f"best {min(values):.1f} µs, median {median(values):.1f} µs a render (CPU)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
