"""A Hall member's part in the government (docs/GOVERNANCE.md): proposals voted by reactions,
some edited (void) and some votes taken back; requests for justice and the Judge's rulings;
confidence votes; candidacies for Judge.

A reaction on a player's message names it ``msg:ID``, ID being the message's id as the Hall's
state holds it (a proposal's or a candidacy's ``message``): the run turns it into the
platform's message."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from dealer.games.hall.judge import poll_name

from .base import Act, GameView, Player

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


def message_ref(message_id: str) -> str:
    """The ref a reaction gives a player's message the Hall's state names by ``message_id``."""
    return f"msg:{message_id}"


@dataclass
class Citizen:
    """What a member does in the government, and remembers of it."""

    votes: dict[str, str] = field(default_factory=dict)
    """What it voted on (a reaction's ref) and with which emoji."""
    proposals: list[str] = field(default_factory=list)
    """The keys of its proposal messages."""
    editing: list[str] = field(default_factory=list)
    """The proposals it edits at its next turn, during their vote (GH-22: void)."""
    retract: list[str] = field(default_factory=list)
    """The votes it takes back at its next turn."""
    standing: str | None = None
    """The key of its candidacy this week, while it stands."""

    def acts(self, me: Player, view: GameView, rng: random.Random, state) -> list[Act]:
        """``me``'s votes, a proposal now and then, requests or rulings, polls, candidacies."""
        acts = self._votes(me, view, rng, state)
        reputable = state.settings.is_reputable(me.name)
        judge = state.judge is not None and state.judge.casefold() == me.name.casefold()
        for key in self.editing:  # edited before its end, it is void (GH-22)
            acts.append(Act(me.name, kind="edit", ref=key, game=view.game_id,
                            body="set holo_percent 1\nEdited: fewer shiny cards."))
        self.editing = []
        if rng.random() < 0.06:
            acts.append(self._propose(me, view, rng, reputable))
            if rng.random() < 0.2:
                self.editing.append(self.proposals[-1])
        if judge:
            acts += self._rule(me, view, rng, state)
        elif rng.random() < 0.04:
            acts.append(me.say(view, rng.choice(REQUESTS), expect="valid", channel=JUSTICE))
        for ruling in state.rulings:
            if not ruling.polled and ruling.overturned is None and rng.random() < 0.08:
                acts.append(me.say(view, f"confidence {ruling.number}", expect="any"))
        if (state.judge is not None and not judge and me.name not in state.removal
                and rng.random() < 0.01):
            acts.append(me.say(view, "remove judge", expect="valid"))
        standing = any(c.candidate.casefold() == me.name.casefold() for c in state.candidacies)
        if standing and self.standing and rng.random() < 0.02:  # GH-34: deleted, withdrawn
            acts.append(Act(me.name, kind="delete", ref=self.standing, game=view.game_id,
                            expect="valid"))
            self.standing = None
        elif reputable and not standing and rng.random() < 0.2:
            self.standing = f"{me.name}-candidacy-{view.now:%Y%m%d%H%M%S}"
            acts.append(me.say(view, rng.choice(CANDIDACIES), expect="valid", channel=ELECTIONS,
                               key=self.standing))
        return acts

    def _propose(self, me: Player, view: GameView, rng: random.Random, reputable: bool) -> Act:
        key = f"{me.name}-proposal-{len(self.proposals) + 1}"
        self.proposals.append(key)
        body = rng.choice(PROPOSAL_TEXTS)
        if rng.random() < 0.3:
            # GH-21: only a reputable player may submit an Urgent proposal
            return me.say(view, "urgent\n" + body, expect="valid" if reputable else "refused",
                          channel=PROPOSALS, key=key)
        return me.say(view, body, expect="valid", channel=PROPOSALS, key=key)

    def _votes(self, me: Player, view: GameView, rng: random.Random, state) -> list[Act]:
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
            acts.append(Act(me.name, kind="unreact", ref=ref, emoji=self.votes[ref],
                            game=view.game_id, expect="any"))
        self.retract = []
        for ref in targets:
            if ref not in self.votes:
                emoji = FOR if rng.random() < 0.7 else AGAINST
                self.votes[ref] = emoji
                acts.append(Act(me.name, kind="react", ref=ref, emoji=emoji,
                                game=view.game_id, expect="valid"))
                if rng.random() < 0.2:
                    self.retract.append(ref)
        return acts

    def _rule(self, me: Player, view: GameView, rng: random.Random, state) -> list[Act]:
        """The Judge answers each request waiting (GH-31), and now and then overturns (GH-33)."""
        acts = []
        for request in state.requests:
            answer = rng.choice(["true", "false", ": yes, as the rules say", ": no, **never**"])
            line = f"ruling {request.number}{answer if answer[0] == ':' else ' ' + answer}"
            acts.append(me.line(view, rng, line, malformed=f"ruling {request.number}",
                                refused=f"ruling {request.number + 1000} true"))
        for ruling in state.rulings:
            if (ruling.judge.casefold() == me.name.casefold() and ruling.overturned is None
                    and rng.random() < 0.03):
                acts.append(me.say(view, f"overturn {ruling.number}", expect="valid"))
        return acts
