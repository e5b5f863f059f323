"""Admin deadline overrides, from ``DEALER_DEADLINE_OVERRIDES`` and the overrides file
(which wins on the same key); README ("Admin deadline overrides") and docs/OPERATING.md
give their syntax and interpretations.

Two interpretations are made here: a ``GAME`` key moves its reminders too, so they keep
their distance to the deadline they announce; a deadline moved into the past fires at
once, moved to the time the override is applied, so the game's later rounds are
scheduled from when it actually fired.
"""

from __future__ import annotations

import json
import logging
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Callable, Iterator

from sqlalchemy import select
from sqlalchemy.orm import Session

from dealer.clock import iso, parse_duration, parse_time
from dealer.games.base import PostDraft
from dealer.history import AdminOverride, DeadlineShift
from dealer.shell.effects import append_event, queue_posts
from dealer.store import queries as Q
from dealer.store.models import Deadline, Game, Override

log = logging.getLogger(__name__)

MAX_AHEAD = timedelta(days=365)
"""How far from now an override may move a deadline."""


class BadOverride(ValueError):
    """An override entry that cannot be understood."""


class Refused(ValueError):
    """An override that reads well but cannot be applied (why is its message)."""


@dataclass(frozen=True)
class OverrideSpec:
    """One parsed entry: which deadlines, and what to do to them."""

    key: str
    game_id: str
    deadline: str | None
    value: str
    tag: str | None = None

    @property
    def action(self) -> str:
        """``pause``, ``now``, ``shift`` or ``at``."""
        if self.value == "pause":
            return "pause"
        if self.value == "now":
            return "now"
        if self.value[:1] in "+-":
            return "shift"
        return "at"


VARIABLE = "DEALER_DEADLINE_OVERRIDES"


def parse_overrides(text: str, source: str = VARIABLE) -> list[OverrideSpec]:
    """Parse one source's text; raise :class:`BadOverride` naming the source and the entry."""
    text = "\n".join(line for line in text.splitlines() if not line.strip().startswith("#"))
    text = text.strip()
    if not text:
        return []
    if text.startswith("{"):
        try:
            mapping = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BadOverride(f"{source} is not valid JSON: {exc}") from None
        except RecursionError:
            raise BadOverride(f"{source} is nested too deeply to read") from None
        if not isinstance(mapping, dict):
            raise BadOverride(f"{source} must be a JSON object")
        pairs = [(str(k), str(v)) for k, v in mapping.items()]
    else:
        pairs = []
        for entry in re.split(r"[;,\n]", text):
            if not entry.strip():
                continue
            key, sep, value = entry.partition("=")
            if not sep:
                raise BadOverride(f"{source}: override {entry.strip()!r} needs the form KEY=VALUE")
            pairs.append((key, value))
    try:
        return [make_spec(key.strip(), value.strip()) for key, value in pairs]
    except BadOverride as exc:
        raise BadOverride(f"{source}: {exc}") from None
    except RecursionError:  # a JSON value nested past Python's limit
        raise BadOverride(f"{source} is nested too deeply to read") from None


def make_spec(key: str, value: str) -> OverrideSpec:
    """One entry, checked as the daemon will read it (raises :class:`BadOverride`)."""
    target, _, tag = key.partition("@")
    if not target:
        raise BadOverride("an override has an empty key")
    game_id, _, deadline = target.partition(":")
    value_l = value.lower()
    if value_l in ("pause", "now"):
        value = value_l
    elif value[:1] in "+-":
        value = value[0] + check_duration(value[1:], f"override {key}={value}")
    else:
        try:
            value = iso(parse_time(value))
        except OverflowError:
            raise BadOverride(
                f"override {key}={value}: the time is outside the calendar dealer can keep"
            ) from None
        except ValueError:
            raise BadOverride(
                f"override {key}={value}: use an ISO UTC time, +12h/-30m, pause or now"
            ) from None
    if tag and value == "pause":
        raise BadOverride(f"override {key}={value}: a pause holds while its entry stays; it takes no @tag")
    return OverrideSpec(key, game_id, deadline or None, value, tag or None)


def check_duration(text: str, what: str) -> str:
    """``text`` if it is a duration such as ``12h`` (a bare number is refused), else :class:`BadOverride`."""
    cleaned = text.strip()
    if not cleaned or cleaned.isdigit():
        raise BadOverride(f"{what}: write the change like +12h, -30m, +1h30m or +2d")
    try:
        # No limit here: a change beyond the calendar or a year away is refused entry by
        # entry when it is applied (refusal()), not as a source that cannot be read.
        parse_duration(cleaned, longest=None)
    except OverflowError:
        raise BadOverride(f"{what}: the change is too large to count") from None
    except ValueError as exc:
        if str(exc).startswith("not a duration"):
            raise BadOverride(f"{what}: write the change like +12h, -30m, +1h30m or +2d") from None
        raise BadOverride(f"{what}: {exc}") from None  # an ambiguous M
    return cleaned


def read_overrides(variable: str, path: Path | str | None) -> list[OverrideSpec]:
    """The overrides in force: the variable's, then the file's; the file wins on a key."""
    merged = {spec.key: spec for spec in parse_overrides(variable)}
    if path:
        for spec in parse_overrides(read_file(Path(path)), source=str(path)):
            merged[spec.key] = spec
    return list(merged.values())


def read_file(path: Path) -> str:
    """The overrides file's text; a missing file holds no overrides."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise BadOverride(f"{path} cannot be read: {exc}") from None


FILE_HEADER = """\
# Admin deadline overrides, same syntax as DEALER_DEADLINE_OVERRIDES; an entry here wins
# over the variable's entry for the same key. Written by `dealer deadline ...` (which
# rewrites this file whole); the daemon re-reads it on every pass and on SIGHUP.
"""


def edit_file(path: Path, change: Callable[[list[OverrideSpec]], list[OverrideSpec]]) -> list[OverrideSpec]:
    """Rewrite the overrides file with ``change(entries)``, atomically and under a lock."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path):
        entries = change(parse_overrides(read_file(path), source=str(path)))
        text = FILE_HEADER + "".join(f"{spec.key}={spec.value}\n" for spec in entries)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(text, encoding="utf-8")
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        os.replace(temporary, path)
    return entries


def tagged(key: str, asked_at: datetime) -> str:
    """``key`` with a tag naming when the change was asked for (``r1@20261201T100500.123456Z``)."""
    return f"{key}@{asked_at:%Y%m%dT%H%M%S.%fZ}"


def request(path: Path, spec: OverrideSpec, applied: dict[str, str]) -> list[OverrideSpec]:
    """Put ``spec`` into the overrides file in place of its key's entry, dropping the tagged
    entries already ``applied`` (done one-off requests)."""

    def change(entries: list[OverrideSpec]) -> list[OverrideSpec]:
        kept = [
            e for e in entries
            if e.key != spec.key and not (e.tag and applied.get(e.key) == e.value)
        ]
        return [*kept, spec]

    return edit_file(path, change)


def withdraw(path: Path, key: str) -> list[OverrideSpec]:
    """Take the entry ``key`` out of the overrides file (a removed pause resumes the game)."""
    return edit_file(path, lambda entries: [e for e in entries if e.key != key])


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    lock_path = path.with_name(f".{path.name}.lock")
    with open(lock_path, "a") as lock:
        try:
            import fcntl
        except ImportError:  # no advisory locks on this platform: edit unlocked
            yield
            return
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def applied_overrides(session: Session) -> dict[str, str]:
    """The entries the daemon has seen and applied, key to value."""
    return {row.key: row.value for row in Q.overrides(session)}


def apply_overrides(session: Session, specs: list[OverrideSpec], now: datetime) -> list[str]:
    """Bring the store in line with the configured overrides; return what changed. The caller commits."""
    # Daemons apply the entries one after another (the step lock alone, Postgres's, in a statement
    # before the reads, which then see what another committed): else two resumed a pause twice.
    session.execute(select(Q.step_lock_alone()))
    changes: list[str] = []
    wanted = {spec.key: spec for spec in specs}
    seen = {row.key: row for row in Q.overrides(session)}
    gone = [row for key, row in seen.items()
            if wanted.get(key) is None or wanted[key].value != row.value]
    # The pauses that stay in force after this pass: a deadline they hold stays paused.
    holding = {(spec.game_id, spec.deadline) for spec in wanted.values() if spec.value == "pause"}
    for row in gone:
        if row.value == "pause":
            changes += _resume(session, row, now, holding)
        session.delete(row)
    session.flush()
    for key, spec in wanted.items():
        row = seen.get(key)
        if row is not None and row.value == spec.value:
            continue
        game = session.get(Game, spec.game_id)
        if game is None:
            log.warning("override %s=%s names no game; ignored", spec.key, spec.value)
            changes.append(f"override {spec.key}={spec.value} ignored: no game {spec.game_id}")
            continue
        # Seen from now on, applied or refused: it is reported once, not on every pass.
        session.add(
            Override(
                key=key, value=spec.value, game_id=spec.game_id,
                deadline_name=spec.deadline, seen_at=now,
            )
        )
        changes += _apply(session, game, spec, now)
    return changes


def _apply(session: Session, game: Game, spec: OverrideSpec, now: datetime) -> list[str]:
    targets = Q.pending_deadlines_of(session, game.id, spec.deadline)
    if spec.action == "pause":
        for row in targets + _children_deadlines(session, game.id, spec.deadline):
            row.paused = True
        _announce(session, game, now, spec, "paused", [], f"pause:{spec.key}:{iso(now)}")
        return [f"{spec.key}: paused"]
    if not targets:
        log.warning("override %s=%s: no pending deadline to change", spec.key, spec.value)
        return [f"override {spec.key}={spec.value}: no pending deadline"]
    try:
        planned = _plan(session, game, targets, spec, now)
    except Refused as exc:
        log.warning("override %s=%s refused: %s", spec.key, spec.value, exc)
        return [f"override {spec.key}={spec.value} refused: {exc}"]
    moved = []
    for row, when in planned:
        before = row.due_at
        # A deadline moved into the past fires now: the rounds after it count from now.
        row.due_at = max(when, now)
        moved.append((row.name, before, row.due_at))
    _announce(session, game, now, spec, spec.action, moved, f"override:{spec.key}:{spec.value}:{iso(now)}")
    return [f"{spec.key}: {name} {iso(a)} -> {iso(b)}" for name, a, b in moved]


def _plan(session: Session, game: Game, targets: list[Deadline], spec: OverrideSpec,
          now: datetime) -> list[tuple[Deadline, datetime]]:
    """Each target with the time ``spec`` moves it to; :class:`Refused` if any is implausible."""
    planned = [(row, _moved_to(row.due_at, spec, now)) for row in targets]
    began = Q.game_began(session, game.id, game.created_at)
    for row, when in planned:  # before its game began or more than a year away: a typo, not a plan
        if when < began:
            raise Refused(f"it would move {row.name} to {iso(when)}, before game {game.id} began ({iso(began)})")
        if when > now + MAX_AHEAD:
            raise Refused(f"it would move {row.name} to {iso(when)}, more than a year away")
    return planned


def refusal(session: Session, spec: OverrideSpec, now: datetime) -> str | None:
    """Why the daemon would refuse ``spec`` at ``now`` (None: it would not), said before writing it."""
    game = session.get(Game, spec.game_id)
    if game is None or spec.action in ("pause", "now"):
        return None  # "now" is the daemon's time when it applies it, not the caller's
    try:
        _plan(session, game, Q.pending_deadlines_of(session, game.id, spec.deadline), spec, now)
    except Refused as exc:
        return str(exc)
    return None


def _moved_to(due: datetime, spec: OverrideSpec, now: datetime) -> datetime:
    """Where ``spec`` moves a deadline due at ``due`` (:class:`Refused` if off the calendar)."""
    try:
        if spec.action == "now":
            return now
        if spec.action == "shift":
            change = parse_duration(spec.value[1:], longest=None)
            return due + change if spec.value[0] == "+" else due - change
        return parse_time(spec.value)
    except (OverflowError, ValueError):
        raise Refused(f"{spec.value} moves the deadline off the calendar") from None


def _children_deadlines(session: Session, game_id: str, name: str | None) -> list[Deadline]:
    """The pending deadlines of the game's unfinished child games, which a whole game's pause holds too."""
    if name is not None:
        return []
    return [deadline for child in Q.child_games(session, game_id) if child[2] != "finished"
            for deadline in Q.pending_deadlines_of(session, child[0])]


def _resume(session: Session, row: Override, now: datetime,
            holding: set[tuple[str, str | None]]) -> list[str]:
    """Lift the pause ``row``: its deadlines run again, later by the pause's length, unless a
    pause still in force (``holding``) covers them."""
    game = session.get(Game, row.game_id)
    if game is None:
        return []
    paused_for = max(now - row.seen_at, timedelta())
    game_held = (game.id, None) in holding
    moved = []
    for deadline in [*Q.pending_deadlines_of(session, game.id, row.deadline_name),
                     *_children_deadlines(session, game.id, row.deadline_name)]:
        if (game_held or (deadline.game_id, None) in holding
                or (deadline.game_id, deadline.name) in holding):
            continue  # its own pause goes on; that pause gives the time back when lifted
        before = deadline.due_at
        deadline.paused = False
        # A deadline that was still ahead when the pause began keeps the time it had left.
        if deadline.due_at > row.seen_at:
            deadline.due_at = deadline.due_at + paused_for
        moved.append((deadline.name, before, deadline.due_at))
    spec = OverrideSpec(row.key, row.game_id, row.deadline_name, "resume")
    _announce(session, game, now, spec, "resumed", moved, f"resume:{row.key}:{iso(now)}")
    return [f"{row.key}: resumed"]


def _announce(session: Session, game: Game, now: datetime, spec: OverrideSpec, action: str,
              moved: list[tuple[str, datetime, datetime]], origin: str) -> None:
    append_event(
        session, game, now,
        AdminOverride(
            key=spec.key, value=spec.value, action=action,
            deadlines=[DeadlineShift(deadline=n, from_=a, to=b) for n, a, b in moved],
        ),
    )
    draft = PostDraft(
        kind="deadline_override",
        template="common/override.txt",
        channel=game.channel,
        recipient=None,
        subject=f"{game.id}: deadline changed by an admin",
        context={
            "game_id": game.id,
            "action": action,
            "moved": [{"name": n, "before": a, "after": b} for n, a, b in moved],
        },
    )
    queue_posts(session, [draft], now, game.id, origin)

