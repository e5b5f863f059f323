"""Exoptosis properties over random matches (GH-10, GH-11, GH-14, GH-16): every card stays
its owner's and ends with it, chips are conserved, no card is in two hands, and no hand
holds a card its owner does not have."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

from hypothesis import event, given, settings, strategies as st

from dealer.cards import CATALOGUE
from dealer.games.exoptosis.testing import T0, MatchShell
from dealer.ledger import CHIPS

CODES = [card.code for card in CATALOGUE]
NAMES = ["alice", "bob", "carol"]


def owned(shell: MatchShell, name: str) -> Counter:
    """What ``name`` owns: its inventory plus its cards the match holds (hands, played)."""
    mine = Counter(i for (acct, i), n in shell.balances.items()
                   if acct == shell.scope.player(name) and i.startswith("card:") for _ in range(n))
    for seat in shell.state.seats:
        mine.update(h.item for h in seat.hand or [] if h.owner == name)
    mine.update(h.item for h in shell.state.played if h.owner == name)
    return mine


def check(shell: MatchShell, names: list[str], start: dict[str, Counter], chips: int) -> None:
    state = shell.state
    in_match = Counter(h.item for s in state.seats for h in s.hand or [])
    in_match.update(h.item for h in state.played)
    pool = Counter({i: n for (acct, i), n in shell.balances.items()
                    if acct == shell.scope.pool(shell.game_id) and i.startswith("card:") and n})
    assert in_match == pool  # each held card is in exactly one place: no card in two hands
    for name in names:
        assert owned(shell, name) == start[name]  # nobody's hand holds a card its owner lacks
    total = sum(shell.has(n) for n in names) + shell.pool_chips()
    assert total == chips  # chips conserved
    assert all(n >= 0 for (acct, _), n in shell.balances.items() if acct != "mint")
    if state.phase == "finished":
        assert not pool and shell.pool_chips() == 0  # every card and chip went home
    else:
        assert shell.pool_chips() == sum(s.stake for s in state.seats)


def lines_for(shell: MatchShell, name: str, data: st.DataObject) -> list[str]:
    state = shell.state
    seat = state.seat(name)
    others = [s.name for s in state.remaining]
    inventory = [i.split(":")[1] for (acct, i), n in shell.balances.items()
                 if acct == shell.scope.player(name) and i.startswith("card:") and n > 0]
    hand = [h.card.code for h in seat.hand or []]
    lines = ["forfeit", "terminate", "match", "fold", "raise 1", "raise 3"]
    if len(inventory) >= 2:
        lines.append("hand " + " ".join(data.draw(st.lists(st.sampled_from(inventory),
                                                           min_size=4, max_size=6))))
    for code in hand:
        targets = data.draw(st.lists(st.sampled_from(others + hand), max_size=3))
        lines.append(f"play {code} on {' '.join(targets)}" if targets else f"play {code}")
        lines.append(f"give {code}")
    lines += [f"add {code}" for code in inventory[:3]]
    lines += [f"ask {other}" for other in others]
    return lines


def sensible(shell: MatchShell, names: list[str], data: st.DataObject) -> tuple[str, list[str]]:
    """An actor expected to act now and the lines help offers it (a hand of its own cards in
    the setup)."""
    state = shell.state
    if state.phase == "play":
        actor = state.asked.giver if state.asked else state.current
    else:
        actor = data.draw(st.sampled_from([s.name for s in state.remaining]))
    lines = [line.split(" — ")[0] for line in shell.rules.help(state, actor)
             if not line.startswith("(")]
    if state.phase == "setup":
        inventory = [i.split(":")[1] for (acct, i), n in shell.balances.items()
                     if acct == shell.scope.player(actor) and i.startswith("card:")
                     for _ in range(n)]
        if len(inventory) >= 4:
            picks = data.draw(st.lists(st.integers(0, len(inventory) - 1), unique=True,
                                       min_size=4, max_size=min(6, len(inventory))))
            lines = [f"hand {' '.join(inventory[i] for i in picks)}"]
    if state.phase == "betting":
        lines = ["match", "match", "match", "raise 1", "raise 2", "fold"]
    return actor, [line for line in lines if line not in ("forfeit", "terminate")] or lines


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_matches_keep_every_card_with_its_owner_and_conserve_chips(data) -> None:  # type: ignore[no-untyped-def]
    shell = MatchShell(render=False)
    names = NAMES[:data.draw(st.integers(2, 3), label="players")]
    for name in names:
        cards = data.draw(st.lists(st.sampled_from(CODES), min_size=4, max_size=9), label=name)
        shell.deal(name, *cards, chips=data.draw(st.integers(0, 6)))
    shell.start(names)
    start = {name: owned(shell, name) for name in names}
    chips = sum(shell.has(n) for n in names)
    at = T0
    for _ in range(data.draw(st.integers(5, 80), label="steps")):
        if shell.state.phase == "finished":
            break
        at += timedelta(minutes=data.draw(st.integers(1, 90)))
        if data.draw(st.integers(0, 19)) == 19 and shell.deadlines:
            shell.fire_due(min(shell.deadlines.values()))  # a window or a turn runs out
        elif data.draw(st.integers(0, 4)) == 4:  # anything, by anyone: mostly refused
            actor = data.draw(st.sampled_from(names))
            shell.send(actor, data.draw(st.sampled_from(lines_for(shell, actor, data))), at,
                       fire_first=False)
        else:  # what the one expected to act may do now, as help offers it
            actor, lines = sensible(shell, names, data)
            if lines:
                shell.send(actor, data.draw(st.sampled_from(lines)), at, fire_first=False)
        check(shell, names, start, chips)
    # How far the match went (`--hypothesis-show-statistics`): about half play cards.
    event(f"played cards: {min(sum(1 for e in shell.events if e[0] == 'played'), 5)}+")
    for name in names:  # end it: each forfeits in turn until one is left (or it was over)
        if shell.state.phase != "finished" and shell.state.seat(name).out is None:
            at += timedelta(minutes=1)
            shell.send(name, "forfeit", at, fire_first=False)
        check(shell, names, start, chips)
    assert shell.state.phase == "finished"
    for name in names:
        assert owned(shell, name) == start[name]
    assert shell.totals().get(CHIPS, 0) == 0
