"""A group of messages applied in one transaction writes its append-only rows together
(issue 13): its steps' history events, ledger entries, draws and posts, the replies and the
messages' outcomes are staged and written in one statement per table before the commit,
in order; what a later message of the group reads of them it sees. The group reads its
senders and their games in one statement, read again for a sender once a step of the
group changed who plays in a game or a game's status. On a real store."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sqlalchemy import event, select

import tally
from sqlcount import statements
from dealer.shell import unit_of_work
from dealer.shell.admin import add_player, create_game
from dealer.shell.passes import PassReport
from dealer.store.models import Event, Inbound, Post
from dealer.views import game_view

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
AT = T0 + timedelta(minutes=30)  # a tally closes at T0 + 1 h
STRANGER = "discord:80351110224678912"


def keys(h) -> list[str]:  # type: ignore[no-untyped-def]
    """Every queued post's key, in outbox order (the order of delivery)."""
    return h.admin(lambda s: [p.key for p in s.scalars(select(Post).order_by(Post.id))])


def inbound_ids(h) -> list[int]:  # type: ignore[no-untyped-def]
    return h.admin(lambda s: list(s.scalars(select(Inbound.id).order_by(Inbound.id))))


def raceway(h) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0)
        add_player(session, "bob", T0)
        create_game(session, "races", "derby", T0)
    h.admin(setup)


def test_a_group_writes_its_posts_in_one_statement_in_the_order_of_its_steps(harness) -> None:  # type: ignore[no-untyped-def]
    raceway(harness)
    before = keys(harness)
    harness.send("alice", "sit", AT, channel="#the-raceway")
    harness.send("bob", "good evening\nsit\nstand", AT + timedelta(seconds=1), channel="#the-raceway")
    harness.send("alice", "stand", AT + timedelta(seconds=2), channel="#the-raceway")
    harness.send("carol", "sit", AT + timedelta(seconds=3), channel="#the-raceway")  # no player
    harness.dealer.ingest(AT)
    sent = statements(harness.dealer.engine)
    report = PassReport(now=AT)
    harness.dealer.process_due(AT, report)
    assert report.messages == 4 and report.ok
    a1, b, a2, c = inbound_ids(harness)
    # Each step's public posts, then its message's one reply, message after message: the
    # ids (the order of delivery) are those of messages applied one at a time.
    assert keys(harness)[len(before):] == [
        f"in:{a1}:0:0", f"in:{a1}:reply:0",  # alice seated
        f"in:{b}:1:0", f"in:{b}:2:0", f"in:{b}:reply:0",  # bob seated, stood
        f"in:{a2}:0:0", f"in:{a2}:0:1", f"in:{a2}:reply:0",  # alice stood; the race abandoned
        f"in:{c}:reply:0",  # carol is told she is no player
    ]
    # One insert of the posts, one of the events and one update of the outcomes, each an
    # executemany, for the whole group.
    assert sent.count(("INSERT INTO outbox", True)) == 1
    assert sent.count(("INSERT INTO events", True)) == 1
    assert sent.count(("UPDATE inbound SET", True)) == 1
    assert not [s for s in sent if s[0] in ("INSERT INTO outbox", "INSERT INTO events", "UPDATE inbound SET")
                and not s[1]]
    statuses = harness.admin(lambda s: [(m.status, m.game_id) for m in s.scalars(select(Inbound).order_by(Inbound.id))])
    assert statuses == [("applied", "derby")] * 3 + [("rejected", None)]
    seqs = harness.admin(lambda s: list(s.scalars(select(Event.seq).where(Event.game_id == "derby").order_by(Event.seq))))
    assert seqs == list(range(1, len(seqs) + 1))


def test_an_unlinked_account_is_told_once_when_its_messages_share_a_group(harness) -> None:  # type: ignore[no-untyped-def]
    # The notice is looked for in the outbox: the first message's, staged with the group,
    # is written before the second message reads.
    harness.send(STRANGER, "sit", AT)
    harness.send(STRANGER, "stand", AT + timedelta(seconds=1))
    harness.send(STRANGER, "hello?", AT + timedelta(seconds=2))
    commits: list[int] = []
    event.listen(harness.dealer.engine, "commit", lambda _conn: commits.append(1))
    harness.dealer.ingest(AT)
    commits.clear()
    harness.dealer.process_due(AT + timedelta(seconds=3))
    assert len(commits) == 1  # one group
    assert [k.split(":")[-2:] for k in keys(harness)] == [["reply", "0"]]
    statuses = harness.admin(lambda s: list(s.scalars(select(Inbound.status))))
    assert statuses == ["rejected"] * 3


def test_an_edit_finds_the_game_of_a_message_of_its_own_group(harness) -> None:  # type: ignore[no-untyped-def]
    # The edit's target is found by the outcome of the message it edits (the game it was
    # applied to), staged with the group: written before the edit reads it.
    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0)
        add_player(session, "bob", T0)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"])
    harness.admin(setup)
    first = harness.send("alice", "add 2", AT)
    harness.send("alice", "add 5", AT + timedelta(seconds=1), kind="edit", target=first)
    harness.run(AT + timedelta(seconds=2))
    outcomes = harness.admin(lambda s: [(m.kind, m.status, m.game_id, m.outcome)
                                        for m in s.scalars(select(Inbound).order_by(Inbound.id))])
    assert outcomes == [
        ("message", "applied", "t1", [{"result": "applied", "line": "add 2", "game": "t1"}]),
        ("edit", "ignored", "t1", [{"result": "ignored", "detail": "no rule uses it", "game": "t1"}]),
    ]


def test_a_group_that_fails_leaves_nothing_staged_and_is_applied_one_by_one(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # alice's step is staged, the stranger's read writes it (mid-group), then bob's step
    # crashes: the group is rolled back, rows written mid-group included, and its
    # messages applied one by one: each row once, as without a group.
    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0, chips=10)
        add_player(session, "bob", T0, chips=10)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"])
    harness.admin(setup)
    before = keys(harness)
    original = tally.Tally.handle

    def faulty(self, ctx, state, actor, command):  # type: ignore[no-untyped-def]
        if actor == "bob":
            raise RuntimeError("a bug")
        return original(self, ctx, state, actor, command)

    monkeypatch.setattr(tally.Tally, "handle", faulty)
    harness.send("alice", "add 1", AT)
    harness.send(STRANGER, "add 1", AT + timedelta(seconds=1))
    harness.send("bob", "add 3", AT + timedelta(seconds=2))
    harness.send("alice", "add 4", AT + timedelta(seconds=3))
    report = harness.run(AT + timedelta(seconds=4))
    a1, stranger, b, a2 = inbound_ids(harness)
    assert report.failed_messages == [b] and report.messages == 3
    assert keys(harness)[len(before):] == [
        f"in:{a1}:reply:0", f"in:{stranger}:reply:0", f"in:{b}:failed", f"in:{a2}:reply:0",
    ]
    statuses = harness.admin(lambda s: [m.status for m in s.scalars(select(Inbound).order_by(Inbound.id))])
    assert statuses == ["applied", "rejected", "failed", "applied"]
    assert harness.admin(lambda s: game_view(s, "t1"))["scores"] == {"alice": 5, "bob": 0}
    seqs = harness.admin(lambda s: list(s.scalars(select(Event.seq).where(Event.game_id == "t1").order_by(Event.seq))))
    assert seqs == list(range(1, len(seqs) + 1))
    commands = harness.admin(lambda s: list(s.scalars(
        select(Event.data).where(Event.game_id == "t1", Event.type == "command").order_by(Event.seq))))
    assert [c["line"] for c in commands] == ["add 1", "add 4"]


def test_a_held_game_sends_its_group_one_by_one_and_the_rest_is_applied(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # A message of a held game ends the group without savepoints; one by one, it waits
    # pending and the others are applied, their rows written once.
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob", "carl", "dora"):
            add_player(session, name, T0, chips=10)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"])
        create_game(session, "tally", "t2", T0, players=["carl", "dora"])
    harness.admin(setup)
    original = tally.Tally.on_deadline

    def crashing(self, ctx, state, name):  # type: ignore[no-untyped-def]
        if ctx.game_id == "t2":
            raise KeyError("close")
        return original(self, ctx, state, name)

    monkeypatch.setattr(tally.Tally, "on_deadline", crashing)
    close = T0 + timedelta(hours=1)
    report = harness.run(close)  # t2's deadline crashes: t2 is held
    assert report.failed_deadlines == ["t2:close"]
    before = keys(harness)
    later = close + timedelta(minutes=1)
    harness.send("carl", "add 1", later)
    harness.send("dora", "add 2", later + timedelta(seconds=1))
    # t1 closed: alice's line is refused, in the same group.
    harness.send("alice", "add 3", later + timedelta(seconds=2))
    report = harness.run(later + timedelta(seconds=3))
    assert report.held == 2 and report.messages == 1
    carl, dora, alice = inbound_ids(harness)
    statuses = harness.admin(lambda s: [m.status for m in s.scalars(select(Inbound).order_by(Inbound.id))])
    assert statuses == ["pending", "pending", "rejected"]
    new = keys(harness)[len(before):]
    assert new.count(f"in:{alice}:reply:0") == 1
    assert not [k for k in new if f"in:{carl}:" in k or f"in:{dora}:" in k]


def texts(engine) -> list[str]:  # type: ignore[no-untyped-def]
    """Every statement sent on ``engine`` from now on, its whitespace folded."""
    sent: list[str] = []

    def seen(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        sent.append(" ".join(statement.split()).replace('"', ""))

    event.listen(engine, "before_cursor_execute", seen)
    return sent


def test_a_group_reads_its_senders_and_their_games_once(harness) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob", "carol"):
            add_player(session, name, T0)
        create_game(session, "tally", "t1", T0, players=["alice", "bob", "carol"])
    harness.admin(setup)
    harness.send("alice", "add 1", AT)
    harness.send("bob", "add 2", AT + timedelta(seconds=1))
    harness.send("alice", "add 3", AT + timedelta(seconds=2))
    harness.send("carol", "add 1\nadd 2", AT + timedelta(seconds=3))
    harness.send("bob", "game t1\nadd 1", AT + timedelta(seconds=4))
    harness.send("dave", "add 1", AT + timedelta(seconds=5))  # no player
    harness.dealer.ingest(AT)
    sent = texts(harness.dealer.engine)
    report = PassReport(now=AT)
    harness.dealer.process_due(AT + timedelta(seconds=6), report)
    assert report.messages == 6 and report.ok
    # One statement for the group's senders and their games, the same one locking and
    # reading those games; none for a sender's games again (no step changed who plays in
    # t1), none for the game a `game` line names.
    senders = [s for s in sent if "FROM players LEFT OUTER JOIN game_players" in s]
    assert len(senders) == 1 and [s for s in sent if "seen_seq" in s] == senders
    assert not [s for s in sent if "FROM games JOIN game_players" in s or "FROM games WHERE games.id" in s]
    statuses = harness.admin(lambda s: [(m.status, m.game_id) for m in s.scalars(select(Inbound).order_by(Inbound.id))])
    assert statuses == [("applied", "t1")] * 5 + [("rejected", None)]
    totals = harness.admin(lambda s: game_view(s, "t1"))["scores"]
    assert totals == {"alice": 4, "bob": 3, "carol": 3}


def test_whether_each_sender_was_told_of_each_game_is_read_with_the_groups_senders(brief, harness) -> None:  # type: ignore[no-untyped-def]
    # A brief reply explains the game in a player's first reply about it: the group reads
    # that with its senders (no statement of its own), and its own replies count.
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob"):
            add_player(session, name, T0)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"])
    harness.admin(setup)
    harness.send("bob", "add 1", AT)
    assert harness.run(AT).messages == 1  # bob is told
    for n, (sender, body) in enumerate([("alice", "add 1"), ("bob", "add 2"), ("alice", "add 3")]):
        harness.send(sender, body, AT + timedelta(seconds=1 + n))
    sent = texts(harness.dealer.engine)
    assert harness.run(AT + timedelta(seconds=4)).messages == 3
    assert not [s for s in sent if s.startswith("SELECT outbox.id FROM outbox WHERE outbox.game_id")]
    explained = {name: ["Good to know" in p["body"] for p in harness.pms(name)] for name in ("alice", "bob")}
    assert explained == {"alice": [True, False], "bob": [True, False]}


def test_a_sender_who_joins_a_game_in_a_group_is_routed_to_it_by_the_next_message(harness) -> None:  # type: ignore[no-untyped-def]
    # alice's games were read with the group's senders (none); her seat changes them, so
    # her next message, a PM naming no game, goes to the table she now sits at.
    raceway(harness)
    harness.send("alice", "sit", AT, channel="#the-raceway")
    harness.send("alice", "stand", AT + timedelta(seconds=1))
    harness.dealer.ingest(AT)
    commits: list[int] = []
    event.listen(harness.dealer.engine, "commit", lambda _conn: commits.append(1))
    harness.dealer.process_due(AT + timedelta(seconds=2))
    assert len(commits) == 1  # one group
    outcomes = harness.admin(lambda s: [(m.status, m.game_id, [e["result"] for e in m.outcome])
                                        for m in s.scalars(select(Inbound).order_by(Inbound.id))])
    assert outcomes == [("applied", "derby", ["applied"]), ("applied", "derby", ["applied"])]


def test_a_player_a_match_of_the_group_took_in_is_routed_to_it(harness) -> None:  # type: ignore[no-untyped-def]
    # bob's games were read with the group's senders (the board alone); alice's duel makes
    # him a player of a match, so his `concede`, a match's command sent in a PM, reaches it.
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob"):
            add_player(session, name, T0)
        create_game(session, "board", "b1", T0, players=["alice", "bob"])
    harness.admin(setup)
    harness.send("bob", "help", AT)
    harness.send("alice", "duel bob", AT + timedelta(seconds=1), channel="#board")
    harness.send("bob", "concede", AT + timedelta(seconds=2))
    harness.dealer.ingest(AT)
    commits: list[int] = []
    event.listen(harness.dealer.engine, "commit", lambda _conn: commits.append(1))
    harness.dealer.process_due(AT + timedelta(seconds=3))
    assert len(commits) == 1  # one group
    outcomes = harness.admin(lambda s: [(m.status, m.game_id) for m in s.scalars(select(Inbound).order_by(Inbound.id))])
    assert outcomes == [("ignored", "b1"), ("applied", "b1"), ("applied", "b1-duel-1")]
    assert harness.admin(lambda s: game_view(s, "b1-duel-1"))["winner"] == "alice"


def test_a_game_a_step_of_the_group_ended_is_no_longer_the_senders_game(harness) -> None:  # type: ignore[no-untyped-def]
    # alice's games were read with the group's senders (the board, running); her `close`
    # ends it, so her next PM has no running game to go to.
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob"):
            add_player(session, name, T0)
        create_game(session, "board", "b1", T0, players=["alice", "bob"])
    harness.admin(setup)
    harness.send("alice", "close", AT, channel="#board")
    harness.send("alice", "duel bob", AT + timedelta(seconds=1))
    harness.dealer.ingest(AT)
    harness.dealer.process_due(AT + timedelta(seconds=2))
    outcomes = harness.admin(lambda s: [(m.status, m.game_id, m.outcome[-1].get("detail"))
                                        for m in s.scalars(select(Inbound).order_by(Inbound.id))])
    assert outcomes == [
        ("applied", "b1", None),
        ("rejected", None, "Your game b1 has finished, and you are in no running game."),
    ]
    assert harness.admin(lambda s: game_view(s, "b1"))["status"] == "finished"


def board(h) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob"):
            add_player(session, name, T0)
        create_game(session, "board", "b1", T0, players=["alice", "bob"])
    h.admin(setup)


def test_a_deadline_a_message_of_the_group_set_before_the_next_message_fires_between_them(harness) -> None:  # type: ignore[no-untyped-def]
    # The duel alice opens ends an hour later (its new deadline row, kept with the group's
    # rows, is written before the next due deadline is read): bob's concession, sent after
    # that, finds the duel over.
    board(harness)
    harness.send("alice", "duel bob", AT, channel="#board")
    harness.send("bob", "game b1-duel-1\nconcede", AT + timedelta(minutes=90))
    harness.run(AT + timedelta(minutes=120))
    outcomes = harness.admin(lambda s: [(m.status, m.game_id, m.outcome[-1].get("detail"))
                                        for m in s.scalars(select(Inbound).order_by(Inbound.id))])
    assert outcomes == [("applied", "b1", None), ("rejected", "b1-duel-1", "the duel is over")]
    history = [e["type"] for e in harness.admin(lambda s: game_view(s, "b1-duel-1"))["history"]]
    assert "deadline.fired" in history


def test_a_group_writes_its_games_updates_together_and_a_read_of_a_game_sees_them(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Each game's new state is kept with the group's rows; the help alice asks for reads
    # the table's state as her standing up left it (the group's kept read of the table,
    # which the step brought up to date: unit_of_work.KeptGame).
    monkeypatch.setattr(unit_of_work, "CHECK_KEPT", False)  # it reads again: statements are counted
    raceway(harness)

    def more(session):  # type: ignore[no-untyped-def]
        add_player(session, "carol", T0)
        add_player(session, "dave", T0)
        create_game(session, "tally", "t1", T0, players=["carol", "dave"])
    harness.admin(more)
    harness.send("alice", "sit", AT, channel="#the-raceway")
    harness.send("bob", "sit", AT, channel="#the-raceway")
    harness.run(AT)
    later = AT + timedelta(minutes=1)
    harness.send("carol", "add 2", later)
    harness.send("alice", "stand", later + timedelta(seconds=1))
    harness.send("alice", "help", later + timedelta(seconds=2))
    harness.send("dave", "add 1", later + timedelta(seconds=3))
    harness.dealer.ingest(later)
    sent = texts(harness.dealer.engine)
    harness.dealer.process_due(later + timedelta(seconds=4))
    # Both games locked and read once, with the group's senders' games; their three
    # updates written together at the end, nothing read again.
    assert len([s for s in sent if s.startswith("UPDATE games")]) == 1
    assert len([s for s in sent if "seen_seq" in s]) == 1
    assert not [s for s in sent if s.startswith("SELECT games.kind, CAST(games.state AS TEXT)")]
    help_reply = harness.admin(lambda s: s.scalars(select(Post.body).where(Post.recipient == "alice")
                                                   .order_by(Post.id.desc())).first())
    assert "- sit " in help_reply and "- stand " not in help_reply  # she stood up
    assert harness.admin(lambda s: game_view(s, "t1"))["scores"] == {"carol": 2, "dave": 1}
