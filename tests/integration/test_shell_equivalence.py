"""The fake shell equals the real one: one scripted game of each ruleset, played through
:class:`dealer.testing.RulesShell` and through the daemon on a real store, ends with the
same state, ledger, deadlines, history, posts and refusals (STYLE.md, "Prove the fake
equals the real thing")."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from dealer.shell import effects, steps
from dealer.store.models import Deadline, Event, Game, Holding, Inbound, Post
from dealer.testing import seed_chain
from dealer.text import escape_post
from scripts import SCRIPTS, refused_on_daemon



@pytest.mark.parametrize("kind", sorted(SCRIPTS))
def test_the_fake_shell_plays_a_game_as_the_daemon_does(harness, monkeypatch, kind: str) -> None:  # type: ignore[no-untyped-def]
    script = SCRIPTS[kind]()
    # The daemon makes a fresh secret seed for each new epoch (a Hall phase); here it
    # follows the fake's deterministic chain, so both draw the same cards.
    chain = seed_chain(script.seed)
    monkeypatch.setattr(steps, "new_server_seed", chain)
    monkeypatch.setattr(effects, "new_server_seed", chain)
    script.on_daemon(harness)
    daemon = harness.admin(lambda session: _stored(session, script.game_id))
    shell = script.on_shell()

    assert shell.summary().status == "finished"  # the script plays a whole game
    assert daemon["state"] == shell.state.model_dump(mode="json")
    assert daemon["balances"] == {key: n for key, n in shell.balances.items() if n}
    assert daemon["deadlines"] == shell.deadlines
    assert daemon["history"] == shell.events
    assert daemon["posts"] == [
        (s.draft.channel, s.draft.recipient, s.draft.kind, escape_post(s.draft.subject), s.body,
         s.at)
        for s in script.posts
    ]
    # The daemon answers each message once: its reply holds what the rules told the sender.
    assert len(daemon["replies"]) == len(script.answers)
    for reply, answers in zip(daemon["replies"], script.answers):
        assert all(answer in reply for answer in answers), (reply, answers)
    assert refused_on_daemon(harness) == script.refusals
    assert script.refusals  # each script has lines the rules refuse


def _stored(session: Any, game_id: str) -> dict[str, Any]:
    game = session.get(Game, game_id)
    return {
        "state": game.state,
        "balances": {(h.account, h.item): h.amount for h in session.scalars(select(Holding))
                     if h.amount},
        "deadlines": {d.name: d.due_at for d in session.scalars(
            select(Deadline).where(Deadline.game_id == game_id, Deadline.status == "pending"))},
        "history": [(e.type, e.data) for e in session.scalars(
            select(Event).where(Event.game_id == game_id).order_by(Event.seq))],
        # The one reply per message is the shell's (the fake has none): compared apart.
        "posts": [(p.channel, p.recipient, p.kind, p.subject, p.body, p.created_at)
                  for p in session.scalars(select(Post).order_by(Post.id))
                  if ":reply:" not in p.key],
        "replies": [reply.body if reply else "" for reply in _replies(session)],
    }


def _replies(session: Any) -> list[Post | None]:
    """Each message's reply, in the order the messages were sent (a message without one
    had nothing to tell its sender)."""
    replies = {p.key: p for p in session.scalars(select(Post).where(Post.key.like("in:%:reply:0")))}
    ordered = session.scalars(select(Inbound).order_by(Inbound.sent_at, Inbound.id))
    return [replies.get(f"in:{message.id}:reply:0") for message in ordered]
