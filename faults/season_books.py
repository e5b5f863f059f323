"""The season's books: what the store, the inbox and the outbox must show after a season,
each check printed with what it counted, and the season failed when it played too little to
prove anything (no round, no race, no finished game)."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

import faultlib
from dealer.clock import utcnow
from dealer.health import check_health
from dealer.replay import replay_game
from dealer.store.db import session_factory
from dealer.store.models import Deadline, Event, Game, Inbound, Post
from dealer.verify import verify_game

RESTART_SLACK = timedelta(seconds=30)
"""How late a deadline may fire beyond the downtime: a killed daemon's successor starts,
takes its lock and catches up, in time order, with what came in meanwhile (on 2 cores
shared with other work, several seconds; the figures print the latest). One later still is
a problem only if a daemon ran its loop (its start-up over) that long while it was due:
the time none did (the lives starting up, or killed before their loop began, on a loaded
machine) is no daemon's fault, and is shown (:func:`_timeline`)."""


def audit(engine: Engine, root: Path, sent: Any, runner: Any, lives: list[faultlib.Life],
          settled: datetime, chips: int, faults: Any, figures: Any) -> None:
    """Every check of the module's docstring, into ``figures``."""
    problems = figures.problems
    checks = figures.checks
    k = figures.kills
    webhook = runner.transports.get("webhook")
    if webhook is not None:
        problems += [f"webhook refused {why}" for why in webhook.refused]
        checks.append(("webhook", f"{sum(webhook.answers.values())} answered 202 ("
                       + ", ".join(f"{k} {n}" for k, n in sorted(webhook.answers.items()))
                       + f"), {webhook.retries} tries again while no daemon answered"))
        if webhook.answers.get("conflict"):
            problems.append(f"{webhook.answers['conflict']} webhook message(s) stored as conflicts")
    _inbox(engine, root / "inbox", sent.all(), figures, runner.transports.get("discord"))
    _answers(engine, figures)
    on_discord = _discord(engine, runner.transports.get("discord"), figures)
    by_mail = _mail(engine, runner.transports.get("email"), sent.all().get("email", []), runner,
                    figures)
    faultlib._audit_posts(engine, root / "outbox", root / "sends.log", lives, settled, k,
                          elsewhere=on_discord | by_mail)
    checks.append(("posts", f"{k.posts} queued, {k.sends} sends, {k.resends_after_kill} re-sent "
                            f"after a kill, {k.resends_after_cut} after a cut connection, "
                            f"{k.doubles} doubles, {k.missing} missing"))
    faultlib._audit_deadlines(engine, settled, k, once=False)
    loops = faultlib.read_passes(root / "passes.log")
    late = _late(engine, timedelta(seconds=faults.downtime_seconds()) + RESTART_SLACK, lives, loops)
    checks.append(("deadlines", f"{k.deadlines_fired} fired once each, in order, none early; "
                                f"{late.late} late by more than a kill's restart, "
                                f"{len(late.beyond)} beyond the downtime, {len(late.unexcused)} of "
                                f"them after a daemon ran its loop "
                                f"{RESTART_SLACK.total_seconds():g} s while due; latest "
                                f"{late.latest:.1f} s"))
    problems += [f"deadline fired {d} late, after a daemon ran its loop {ran:.1f} s while it was "
                 f"due: {what}" for what, d, ran in late.unexcused[:10]]
    if late.beyond:
        what, due, fired = late.worst
        checks.append(("lives", f"around {what} (due {due:%H:%M:%S.%f}"[:-3] + f", fired "
                                f"{(fired - due).total_seconds():.1f} s later): "
                                + _timeline(lives, loops, due, fired)))
    table = faultlib.Table([], chips)
    faultlib._audit_ledger(engine, table, k)
    checks.append(("ledger", f"every item sums to zero, no entry crosses a scope, "
                             f"{chips} chips handed out all held"))
    problems += k.problems
    _games(engine, runner, figures)
    _admin(engine, faults, figures)
    health = check_health(engine, utcnow())
    checks.append(("health", "healthy" if health.ok else f"unhealthy: {health}"))
    if not health.ok:
        problems.append(f"dealer health: {health}")
    _vacuity(figures)


def _inbox(engine: Engine, inbox: Path, sent: dict[str, list[str]], figures: Any,
           discord: Any = None) -> None:
    problems = figures.problems
    left = sorted(p.name for p in inbox.glob("*.json"))
    if left:
        problems.append(f"{len(left)} inbox file(s) never taken, e.g. {left[:3]}")
    moved = Counter(p.stem for p in (inbox / "processed").glob("*.json"))
    moved.update(p.stem for p in (inbox / "rejected").glob("*.json"))
    wrong = [i for i in sent.get("dir", []) if moved[i] != 1]
    if wrong:
        problems.append(f"{len(wrong)} inbox file(s) not moved exactly once, e.g. {wrong[:3]}")
    with engine.connect() as connection:
        rows = connection.execute(select(Inbound.source, Inbound.external_id, Inbound.status)).all()
    stored = Counter((source, ident) for source, ident, _ in rows)
    written = [(source, ident) for source, ids in sent.items() for ident in ids]
    not_once = [w for w in written if stored[w] != 1]
    if not_once:
        problems.append(f"{len(not_once)} message(s) not stored exactly once, e.g. "
                        f"{[(w, stored[w]) for w in not_once[:3]]}")
        if discord is not None and any(source == "discord" for source, _ in not_once):
            problems.append("on Discord: " + ", ".join(
                f"{ident} ({discord.where.get(ident, '?')})"
                for source, ident in not_once[:40] if source == "discord"))
    strangers = set(stored) - set(written)
    if strangers:
        problems.append(f"{len(strangers)} stored message(s) nobody sent: {sorted(strangers)[:3]}")
    outcomes = Counter(status for _, _, status in rows)
    for status in ("pending", "failed", "quarantined"):
        if outcomes[status]:
            problems.append(f"{outcomes[status]} message(s) left {status}")
    by_source = ", ".join(f"{source} {len(ids)}" for source, ids in sorted(sent.items()))
    figures.counts["messages"] = len(written)
    figures.counts.update({f"sent {source}": len(ids) for source, ids in sent.items()})
    figures.checks.append(("inbox", f"{len(written)} sent ({by_source}), each stored once; "
                                    + ", ".join(f"{s} {n}" for s, n in sorted(outcomes.items()))))


def _discord(engine: Engine, discord: Any, figures: Any) -> frozenset[int]:
    """Discord's books: each post routed there is in the fake exactly once (by the nonce of
    each of its parts, as the publisher sends it), the bot posted nothing else, and each
    delivered post's platform id is the fake's message; return those posts' ids."""
    if discord is None:
        return frozenset()
    from dealer.publish.discord import nonce

    messages = discord.bot_messages()
    by_nonce: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for message in messages:
        by_nonce[str(message.get("nonce"))].append(message)
    with engine.connect() as connection:
        posts = connection.execute(select(Post.id, Post.key, Post.status, Post.external_id)).all()
    found: set[int] = set()
    problems = figures.problems
    twice, wrong_id, parts = [], [], 0
    known: set[str] = set()
    for post_id, key, status, external_id in posts:
        first = by_nonce.get(nonce(key, 0))
        if not first:
            continue
        found.add(post_id)
        part = 0
        while by_nonce.get(nonce(key, part)):
            if len(by_nonce[nonce(key, part)]) > 1:
                twice.append(key)
            known.add(nonce(key, part))
            parts += 1
            part += 1
        if status == "delivered" and external_id != first[0]["id"]:
            wrong_id.append((key, external_id, first[0]["id"]))
    strays = [m["id"] for m in messages if str(m.get("nonce")) not in known]
    if twice:
        problems.append(f"{len(twice)} post(s) on Discord twice, e.g. {twice[:3]}")
    if wrong_id:
        problems.append(f"{len(wrong_id)} post(s) whose stored Discord id is not the message's, "
                        f"e.g. {wrong_id[:3]}")
    if strays:
        problems.append(f"{len(strays)} Discord message(s) of the bot for no post: {strays[:3]}")
    figures.counts["posts on Discord"] = len(found)
    figures.counts["Discord 429s"] = discord.rate_limited()
    figures.checks.append(("discord", f"{len(found)} posts in {parts} messages, each once "
                                      f"({len(messages)} bot messages, none for no post); "
                                      f"{discord.rate_limited()} requests answered 429, waited out"))
    return frozenset(found)


def _mail(engine: Engine, mail: Any, sent: list[str], runner: Any, figures: Any) -> frozenset[int]:
    """E-mail's books: every mail handed over in the IMAP folder, each read (``\\Seen``) and
    none set aside; each mail the SMTP server took is a post's (by ``X-Dealer-Post``), sent to
    a mail player's address (the pm route's ``email``), a reply threaded to the mail it
    answers; every delivered post to a mail player taken at least once (more than once only
    as the send log allows: faultlib's post audit, which these sends are part of); return
    those posts' ids."""
    if mail is None:
        return frozenset()
    problems = figures.problems
    kept = Counter(ident for ident, _ in mail.kept)
    unread = [ident for ident, flags in mail.kept if b"\\Seen" not in flags]
    set_aside = [ident for ident, flags in mail.kept if b"$DealerRejected" in flags]
    absent = [ident for ident in sent if not kept[ident]]
    if absent:
        problems.append(f"{len(absent)} mail(s) handed over not in the IMAP folder: {absent[:3]}")
    if unread:
        problems.append(f"{len(unread)} mail(s) never read (not \\Seen): {unread[:3]}")
    if set_aside:
        problems.append(f"{len(set_aside)} mail(s) set aside as unreadable: {set_aside[:3]}")
    addresses = {mail.address(name): name for name, way in runner.transport_of.items() if way == "email"}
    with engine.connect() as connection:
        posts = connection.execute(select(Post.id, Post.key, Post.status, Post.recipient)).all()
        mails_in = dict(connection.execute(select(Inbound.id, Inbound.external_id)
                                           .where(Inbound.source == "email")).all())
    by_key = {key: (post_id, status, recipient) for post_id, key, status, recipient in posts}
    taken = Counter(r["key"] for r in mail.received)
    strays = [r["key"] for r in mail.received if r["key"] not in by_key]
    elsewhere = [r["to"] for r in mail.received if r["to"] not in addresses]
    wrong_to = [r["key"] for r in mail.received if r["key"] in by_key and r["to"] in addresses
                and addresses[r["to"]] != by_key[r["key"]][2]]
    unthreaded = []
    for r in mail.received:
        answered = re.match(r"^in:(\d+):reply", r["key"])
        if answered and int(answered.group(1)) in mails_in and \
                r["in_reply_to"] != f"<{mails_in[int(answered.group(1))]}>":
            unthreaded.append(r["key"])
    unmailed = [key for key, (_, status, recipient) in by_key.items()
                if status == "delivered" and recipient in addresses.values() and not taken[key]]
    for what, found in (("mail(s) for no post", strays), ("mail(s) to an address no mail player has", elsewhere),
                        ("mail(s) to another player than the post's", wrong_to),
                        ("repl(ies) to a mail not threaded to it", unthreaded),
                        ("post(s) to a mail player never mailed", unmailed)):
        if found:
            problems.append(f"{len(found)} {what}, e.g. {found[:3]}")
    replies = sum(1 for r in mail.received if re.match(r"^in:\d+:reply", r["key"]))
    figures.counts["mails taken by SMTP"] = len(mail.received)
    figures.counts["replies by mail"] = replies
    figures.checks.append(("e-mail", f"{len(sent)} mails handed over, {len(mail.kept)} in the folder "
                                     f"({len(mail.kept) - len(set(kept))} put in twice after a cut), "
                                     f"each read, none set aside; SMTP took {len(mail.received)} mails "
                                     f"for {len(taken)} posts ({replies} replies, threaded), each to its "
                                     f"mail player; {mail.appends_again} appends tried again; "
                                     f"{figures.kills.kills_named['after-ingest-commit']} lives killed "
                                     f"between storing mails and flagging them read"))
    return frozenset(by_key[key][0] for key in taken if key in by_key)


def _answers(engine: Engine, figures: Any) -> None:
    """Each message answered at most once, and each PM with a command exactly once."""
    with engine.connect() as connection:
        inbound = connection.execute(select(Inbound.id, Inbound.channel, Inbound.kind,
                                            Inbound.status)).all()
        keys = connection.execute(select(Post.key).where(Post.key.like("in:%:reply:%"))).scalars().all()
    replies: Counter[int] = Counter()
    for key in keys:
        replies[int(key.split(":")[1])] += 1
    twice = [i for i, n in replies.items() if n > 1]
    unanswered = [i for i, channel, kind, status in inbound
                  if channel == "pm" and kind == "message" and status != "ignored" and not replies[i]]
    if twice:
        figures.problems.append(f"{len(twice)} message(s) answered more than once, e.g. {twice[:3]}")
    if unanswered:
        figures.problems.append(f"{len(unanswered)} PM(s) never answered, e.g. {unanswered[:3]}")
    figures.checks.append(("answers", f"{sum(replies.values())} replies, none twice; "
                                      f"{len(unanswered)} PMs unanswered"))


@dataclass
class Late:
    late: int = 0
    """Deadlines fired later than :data:`RESTART_SLACK` after they fell due."""
    beyond: list[tuple[str, timedelta]] = field(default_factory=list)
    """Those later than the downtime and the slack."""
    unexcused: list[tuple[str, timedelta, float]] = field(default_factory=list)
    """Of ``beyond``, those fired after a daemon ran its loop longer than the slack while
    they were due (and how long): the problems."""
    latest: float = 0.0
    worst: tuple[str, datetime, datetime] | None = None
    """The latest of ``beyond``: its name, when it fell due, when it fired."""


def _late(engine: Engine, allowed: timedelta, lives: list[faultlib.Life],
          loops: dict[str, faultlib.Loop]) -> Late:
    """Deadlines fired late, judged by how long a daemon ran its loop while each was due."""
    with engine.connect() as connection:
        rows = connection.execute(select(Deadline.game_id, Deadline.name, Deadline.due_at,
                                         Deadline.fired_at).where(Deadline.status == "fired")).all()
    out = Late()
    latest = timedelta(0)
    for game_id, name, due_at, fired_at in rows:
        delay = fired_at - due_at
        what = f"{game_id} {name}"
        if delay > latest:
            latest = delay
            out.worst = (what, due_at, fired_at)
        if delay > RESTART_SLACK:
            out.late += 1
        if delay > allowed:
            out.beyond.append((what, delay))
            ran = _running(lives, loops, due_at.timestamp(), fired_at.timestamp())
            if ran > RESTART_SLACK.total_seconds():
                out.unexcused.append((what, delay, ran))
    out.latest = latest.total_seconds()
    if not out.beyond:
        out.worst = None
    return out


def _running(lives: list[faultlib.Life], loops: dict[str, faultlib.Loop], since: float,
             until: float) -> float:
    """Seconds of ``since``..``until`` (Unix times) during which a daemon ran its loop: some
    life had begun it (the pass log) and not yet ended."""
    spans = sorted((max(loop.started, since), min(until if life.ended is None else life.ended, until))
                   for life in lives
                   if (loop := loops.get(str(life.pid))) is not None and loop.started is not None)
    total, reached = 0.0, since
    for start, end in spans:
        start = max(start, reached)
        if end > start:
            total += end - start
            reached = end
    return total


def _timeline(lives: list[faultlib.Life], loops: dict[str, faultlib.Loop], due: datetime,
              fired: datetime) -> str:
    """The lives from a while before ``due`` to ``fired``, each as ``rREPLICA pPID PLAN`` with
    its times in seconds from ``due``: asked of the fork server, its loop begun (``no loop``:
    killed in its start-up), how many passes it completed, its end."""
    zero, last = due.timestamp(), fired.timestamp()
    shown = []
    for life in lives:
        if life.began > last or (life.ended is not None and life.ended < zero - 5):
            continue
        loop = loops.get(str(life.pid), faultlib.Loop())
        begun = f"loop {loop.started - zero:+.1f}" if loop.started is not None else "no loop"
        ended = f"{life.ended - zero:+.1f} {life.end}" if life.ended is not None else "running"
        shown.append((life.began, f"r{life.replica} p{life.pid} {life.plan}: {life.began - zero:+.1f}, "
                                  f"{begun}, {len(loop.passes)} passes, end {ended}"))
    return "; ".join(line for _, line in sorted(shown)) or "no life"


def _games(engine: Engine, runner: Any, figures: Any) -> None:
    """Replay equal for every game, verify passing for every finished one, none stuck."""
    problems = figures.problems
    with engine.connect() as connection:
        games = connection.execute(select(Game.id, Game.kind, Game.status)).all()
        events = Counter(connection.execute(select(Event.type)).scalars())
        said = connection.execute(select(Event.type, Event.data).where(Event.type.in_(
            ("proposal.changed", "proposal.tallied", "vote.marked", "fight.opened")))).all()
    # The Hall's pieces the issue lists, each counted (GH-18 to GH-22).
    hall: Counter[str] = Counter()
    for kind, data in said:
        if kind == "proposal.changed":
            hall[f"proposals {data['change']}"] += 1
        elif kind == "proposal.tallied":
            hall[f"{'urgent' if data['urgent'] else 'standard'} proposals {data['status']}"] += 1
        elif kind == "vote.marked":
            hall["votes cast" if data["present"] else "votes taken back"] += 1
        else:
            hall[f"{data['fight']}s fought"] += 1
    replayed = verified = 0
    status: dict[str, Counter[str]] = defaultdict(Counter)
    with session_factory(engine)() as session:
        for game_id, kind, state in games:
            status[kind][state] += 1
            report = replay_game(session, game_id)
            replayed += 1
            if not report.ok:
                problems.append(f"{game_id}: dealer replay differs from the store: {report.difference}")
            if state == "finished":
                verification = verify_game(session, game_id)
                verified += 1
                if not verification.ok:
                    problems.append(f"{game_id}: dealer verify: {verification.problems[:3]}")
            else:
                problems.append(f"{game_id} ({kind}) {state} at the end: stuck")
    figures.checks.append(("games", f"{replayed} replayed equal, {verified} verified; " + "; ".join(
        f"{kind}: " + ", ".join(f"{n} {s}" for s, n in sorted(c.items()))
        for kind, c in sorted(status.items()))))
    figures.counts.update({
        "roulette games finished": status["roulette"]["finished"],
        "rounds played": events["round.resolved"],
        "races tables finished": status["races"]["finished"],
        "hall cycles ended": status["hall"]["finished"],
        "matches finished": status["exoptosis"]["finished"],
        "proposals resolved": events["proposal.tallied"],
        "rulings given": events["ruling.given"],
        "confidence polls tallied": events["poll.tallied"],
        "elections held": events["election.tallied"],
        "packs opened": events["pack_opened"], "gifts": events["gift"], "trades": events["trade"],
        "proposals edited": hall["proposals edited"], "votes taken back": hall["votes taken back"],
        "urgent proposals resolved": sum(n for k, n in hall.items() if k.startswith("urgent ")),
        "battles fought": hall["battles fought"], "duels fought": hall["duels fought"],
    })
    if figures.season.hall:
        figures.checks.append(("hall", ", ".join(f"{k} {n}" for k, n in sorted(hall.items()))))
    _races(engine, runner, figures)


def _admin(engine: Engine, faults: Any, figures: Any) -> None:
    """Each admin command ran, and its override shows in its game's history."""
    with engine.connect() as connection:
        data = connection.execute(select(Event.data).where(Event.type == "admin.override")).scalars()
        actions = Counter(d.get("action", "?") for d in data)
    figures.problems += faults.refused
    figures.counts.update({f"admin {a}": n for a, n in actions.items()})
    figures.checks.append(("admins", f"{len(faults.commands)} commands; overrides applied: "
                           + (", ".join(f"{a} {n}" for a, n in sorted(actions.items())) or "none")))


def _races(engine: Engine, runner: Any, figures: Any) -> None:
    """Each races table the runner opened ran its race or closed as its history says (OR-3
    no race, OR-10 abandoned); how many it opened depends on the days played, not on the
    clock: the next day's table opens once the last is over, so a slow machine opens fewer."""
    opened = [t.game_id for t in runner.tables if t.kind == "races"]
    with engine.connect() as connection:
        rows = connection.execute(select(Event.game_id, Event.data)
                                  .where(Event.type == "table.finished")).all()
    outcome = {game_id: data.get("outcome", "?") for game_id, data in rows}
    counted = Counter(outcome.get(g, "not finished") for g in opened)
    figures.counts["races tables opened"] = len(opened)
    figures.counts["races run"] = counted["raced"]
    figures.counts["races tables closed"] = counted["no_race"] + counted["abandoned"]
    strange = {g: outcome.get(g, "not finished") for g in opened
               if outcome.get(g) not in ("raced", "no_race", "abandoned")}
    if strange:
        figures.problems.append(f"races table(s) neither raced nor closed: {strange}")
    figures.checks.append(("races", f"{len(opened)} tables opened: " + ", ".join(
        f"{what} {n}" for what, n in sorted(counted.items()))))


MILESTONES = {"rounds played": 1, "roulette games finished": 1, "races run": 2}
"""What a season must have done to prove anything: rounds, finished games, a race on two days
(the daily table), or on each table opened when fewer were (a slow machine plays fewer
races' days in the same season: the next table opens once the last is over)."""


HALL_MILESTONES = {"hall cycles ended": 1, "matches finished": 1, "proposals resolved": 1,
                   "elections held": 1}
"""The Hall's part: a cycle won and ended (GH-8), a match fought through (GH-16), proposals
tallied (GH-21) and an election (GH-34) in the short weeks of GH-35. Its other pieces are
counted, not required: a short season may not play each (a ruling needs a request and the
Judge's turn, a confidence poll a ruling and a member asking in time, an edit a proposal
open)."""


def _vacuity(figures: Any) -> None:
    """Fail a season that played too little, or whose faults asked for never happened."""
    least_of = dict(MILESTONES)
    if figures.season.hall:
        least_of.update(HALL_MILESTONES)
    # A table closed unraced as its rules say (OR-3: no horse when seating closed, as when
    # the downtime covered it; OR-10) is accounted for; one race at least, whatever happened.
    could = figures.counts.get("races tables opened", 0) - figures.counts.get("races tables closed", 0)
    least_of["races run"] = max(1, min(MILESTONES["races run"], could))
    missing = [f"{name} (at least {least})" for name, least in least_of.items()
               if figures.counts.get(name, 0) < least]
    season, faults = figures.season, figures.faults
    if season.kills and not figures.kills.kills:
        missing.append("a daemon killed")
    if season.downtime > 0 and faults.get("downtime") == "none":
        missing.append("the day of downtime")
    if season.outage and faults.get("publisher outage") == "none":
        missing.append("the publisher outage")
    if season.disconnects and figures.backend == "postgresql" and not faults.get("connections cut"):
        missing.append("a connection cut")
    if season.admin and not (figures.counts.get("admin paused") and figures.counts.get("admin resumed")
                             and len([k for k in figures.counts if k.startswith("admin ")]) > 2):
        missing.append("an override of each kind applied (a move, a pause, its resume)")
    transports = ["email" if season.email else "dir",
                  *(t for t, on in (("webhook", season.webhook), ("discord", season.discord)) if on)]
    if season.discord and not figures.counts.get("posts on Discord"):
        missing.append("a post on Discord")
    if season.email and not figures.counts.get("replies by mail"):
        missing.append("a reply by mail")
    if season.email and season.disconnects and not faults.get("IMAP connections cut"):
        missing.append("an IMAP connection cut")
    missing += [f"a message over {t}" for t in transports if not figures.counts.get(f"sent {t}")]
    if missing:
        figures.problems.append(f"vacuous season: nothing of {'; '.join(missing)}")
