"""Gilded Hall players: the economy (packs, the Croupier, gifts, trades), fights (battles and
duels), and the government (proposals voted by reactions, requests for justice and rulings,
confidence votes, Judge elections), as docs/HALL.md and docs/GOVERNANCE.md describe them.

A reaction on a player's message names it ``msg:ID``, ID being the message's id as the Hall's
state holds it (a proposal's or a candidacy's ``message``): the runner turns it into the
platform's message."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from dealer.games.hall.judge import poll_name
from dealer.ledger import VERTEBRAE

from .base import Act, GameView, Player, Temperament, garble
from .races import own_cards

ACTIONS = "#game-actions"
PROPOSALS = "#proposals"
JUSTICE = "#request-for-justice"
ELECTIONS = "#judge-elections"
FOR, AGAINST = "👍", "👎"

PROPOSAL_TEXTS = (
    "set price_random_card 4\nCards should be cheaper for everyone.",
    "set holo_percent 20\nMore **shiny** cards, please.",
    "set victory_chips 3\nLet us finish this cycle sooner, @everyone.",
    "Members greet newcomers in #game-actions before trading with them.",
    "set price_chip 20\n_Chips_ for the people!",
    "set price_deck_pack 15\n<@123> says deck packs are too dear.",
)
REQUESTS = (
    "Does a gift count as an action?",
    "Is it true that a **trade** with nothing on one side is still a trade?",
    "Can @everyone vote on an Urgent proposal?",
    "Statement: a holographic 7H is not a 7H in an offer.",
)
CANDIDACIES = (
    "I stand for Judge: quick rulings, **no** favourites.",
    "Vote for me as Judge <@456>, I read the rules twice.",
)
PACKS = ("handy", "deck", "legendary")


def message_ref(message_id: str) -> str:
    """The ref a reaction gives a player's message the Hall's state names by ``message_id``."""
    return f"msg:{message_id}"


@dataclass
class HallPlayer(Player):
    """Joins, then each turn answers what was put to it, and now and then trades, fights and
    takes part in the government; a Judge rules on what waits for it."""

    votes: dict[str, str] = field(default_factory=dict)
    """What it voted on (a reaction's ref) and with which emoji."""
    proposals: list[str] = field(default_factory=list)
    """The keys of its proposal messages."""
    retract: list[str] = field(default_factory=list)
    """The votes it takes back at its next turn."""

    def decide(self, view: GameView, rng: random.Random) -> list[Act]:
        """Join first; then answers, an economic move, a fight, the government."""
        state = view.state()
        if state is None or state.status != "running":
            return []
        me = state.member(self.name)
        if me is None:
            return [self.say(view, "join", expect="valid", channel=ACTIONS)]
        others = [m.name for m in state.members if m.name != me.name]
        acts = self._answers(view, rng, state)
        if not acts and rng.random() < 0.6:  # what it pays for an answer is not yet seen
            acts += self._economy(view, rng, state, me, others)
        acts += self._fight(view, rng, state, others)
        acts += self._government(view, rng, state, others)
        return acts

    # --- what was put to it ------------------------------------------------------------

    def _answers(self, view: GameView, rng: random.Random, state) -> list[Act]:
        acts = []
        for offer in state.offers:
            if offer.target.casefold() == self.name.casefold():
                held = view.holdings(self.name)
                affordable = all(held.get(item, 0) >= n for item, n in offer.wants.items())
                verb = "accept" if affordable and rng.random() < 0.7 else "decline"
                acts.append(self.say(view, f"{verb} offer {offer.id}", expect="valid"))
        for duel in state.challenges:
            mine = {n.casefold() for n in duel.challenged} - {n.casefold() for n in duel.accepted}
            if self.name.casefold() in mine:
                verb = "accept" if rng.random() < 0.85 else "decline"
                acts.append(self.say(view, f"{verb} duel {duel.id}", expect="valid"))
        return acts

    # --- the economy (GH-1 to GH-7) ----------------------------------------------------

    def _economy(self, view: GameView, rng: random.Random, state, me, others) -> list[Act]:
        prices = state.settings
        held = view.holdings(self.name)
        vertebrae = held.get(VERTEBRAE, 0)
        packs = [p for p in PACKS if held.get(f"pack:{p}", 0) > 0]
        cards = own_cards(view, self.name)
        moves: list[tuple[str, str | None]] = []  # (valid line, a refused version)
        if packs:
            moves.append((f"open {rng.choice(packs)} pack",
                          next((f"open {p} pack" for p in PACKS if p not in packs), None)))
        if vertebrae >= prices.price_chip:
            moves.append(("buy chip", None))
        if vertebrae >= prices.price_deck_pack:
            moves.append(("buy deck pack", "buy 100 legendary packs"))
        elif vertebrae >= prices.price_random_card:
            moves.append(("buy random card", "buy 100 legendary packs"))
        if me.gifted is None and others:
            moves.append((f"gift {rng.choice(others)}", f"gift {self.name}"))
        if cards and others:
            moves.append((f"offer {rng.choice(cards)} to {rng.choice(others)} for "
                          f"{rng.randint(1, 5)} vertebrae", f"offer {cards[0]} to {self.name} for nothing"))
        if not moves:
            return []
        valid, refused = rng.choice(moves)
        malformed = "gift" if valid.startswith("gift") else garble(valid, rng)
        return [self.line(view, rng, valid, malformed=malformed, refused=refused,
                          channel=rng.choice([ACTIONS, "pm"]))]

    # --- fights (GH-18, GH-19) ---------------------------------------------------------

    def _fight(self, view: GameView, rng: random.Random, state, others) -> list[Act]:
        cards = state.cards.get(self.name, len(own_cards(view, self.name)))
        if cards < 4:
            return []
        if self.name not in state.battlers and rng.random() < 0.3:
            return [self.say(view, "battle", expect="valid", channel=ACTIONS)]
        if others and rng.random() < 0.05:
            return [self.say(view, f"duel {rng.choice(others)}", expect="valid", channel=ACTIONS)]
        return []

    # --- the government (GH-20 to GH-34) -----------------------------------------------

    def _government(self, view: GameView, rng: random.Random, state, others) -> list[Act]:
        acts = self._votes(view, rng, state)
        reputable = state.settings.is_reputable(self.name)
        judge = state.judge is not None and state.judge.casefold() == self.name.casefold()
        if rng.random() < 0.06:
            acts.append(self._propose(view, rng, reputable))
        if self.proposals and rng.random() < 0.04:  # edited before its end, it is void (GH-22)
            acts.append(Act(self.name, kind="edit", ref=self.proposals.pop(), game=view.game_id,
                            body="set holo_percent 1\nEdited: fewer shiny cards."))
        if judge:
            acts += self._rule(view, rng, state)
        elif rng.random() < 0.04:
            acts.append(self.say(view, rng.choice(REQUESTS), expect="valid", channel=JUSTICE))
        for ruling in state.rulings:
            if not ruling.polled and ruling.overturned is None and rng.random() < 0.03:
                acts.append(self.say(view, f"confidence {ruling.number}", expect="any"))
        if (state.judge is not None and not judge and self.name not in state.removal
                and rng.random() < 0.01):
            acts.append(self.say(view, "remove judge", expect="valid"))
        if reputable and rng.random() < 0.2 and not any(
                c.candidate.casefold() == self.name.casefold() for c in state.candidacies):
            acts.append(self.say(view, rng.choice(CANDIDACIES), expect="valid", channel=ELECTIONS))
        return acts

    def _propose(self, view: GameView, rng: random.Random, reputable: bool) -> Act:
        key = f"{self.name}-proposal-{len(self.proposals) + 1}"
        self.proposals.append(key)
        body = rng.choice(PROPOSAL_TEXTS)
        if rng.random() < 0.3:
            # GH-21: only a reputable player may submit an Urgent proposal
            return self.say(view, "urgent\n" + body, expect="valid" if reputable else "refused",
                            channel=PROPOSALS, key=key)
        return self.say(view, body, expect="valid", channel=PROPOSALS, key=key)

    def _votes(self, view: GameView, rng: random.Random, state) -> list[Act]:
        """A vote on each open proposal, candidacy and confidence poll; a few taken back a
        turn later."""
        targets = [message_ref(p.message) for p in state.proposals if not p.closed]
        targets += [message_ref(c.message) for c in state.candidacies]
        polls = {poll_name(p.ruling) for p in state.polls}
        firsts: dict[str, str] = {}
        for post in view.posts():
            if post.ref in polls:
                firsts.setdefault(post.ref, post.key)  # the poll's own post
        targets += list(firsts.values())
        acts = []
        for ref in self.retract:
            acts.append(Act(self.name, kind="unreact", ref=ref, emoji=self.votes[ref],
                            game=view.game_id, expect="any"))
        self.retract = []
        for ref in targets:
            if ref not in self.votes:
                emoji = FOR if rng.random() < 0.7 else AGAINST
                self.votes[ref] = emoji
                acts.append(Act(self.name, kind="react", ref=ref, emoji=emoji,
                                game=view.game_id, expect="valid"))
                if rng.random() < 0.1:
                    self.retract.append(ref)
        return acts

    def _rule(self, view: GameView, rng: random.Random, state) -> list[Act]:
        """The Judge answers each request waiting (GH-31), and now and then overturns (GH-33)."""
        acts = []
        for request in state.requests:
            answer = rng.choice(["true", "false", ": yes, as the rules say", ": no, **never**"])
            line = f"ruling {request.number}{answer if answer[0] == ':' else ' ' + answer}"
            acts.append(self.line(view, rng, line, malformed=f"ruling {request.number}",
                                  refused=f"ruling {request.number + 1000} true"))
        for ruling in state.rulings:
            if (ruling.judge.casefold() == self.name.casefold() and ruling.overturned is None
                    and rng.random() < 0.03):
                acts.append(self.say(view, f"overturn {ruling.number}", expect="valid"))
        return acts


def player(name: str, temperament: Temperament) -> HallPlayer:
    """A Hall player."""
    return HallPlayer(name, temperament)

