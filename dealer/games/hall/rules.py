"""The Gilded Hall ruleset (RULES GH): it routes each command to the module of its rule."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable


from dealer.clock import format_utc
from dealer.games import register
from dealer.games.base import Context, Rejected, Rules, Summary
from dealer.history import DeletionSent, EditSent, MessageTaken, ReactionSent
from dealer.games.commands import Receipts
from dealer.games.hall import economy, elections, events, fights, gifts, governance, phases, trades
from dealer.games.hall.commands import (
    COMMANDS, AnswerOffer, Buy, Gift, Join, MakeOffer, OpenPack, ShowInventory,
)
from dealer.games.hall.items import inventory
from dealer.games.hall.state import Happening, HallSettings, HallState, Member

Action = Callable[[Context, HallState, str, Any], None]

ACTIONS: dict[type, Action] = {
    OpenPack: economy.open_pack,
    Buy: economy.buy,
    MakeOffer: trades.make_offer,
    AnswerOffer: trades.answer_offer,
    Gift: gifts.gift,
    **fights.FIGHT_ACTIONS,
}
"""Every command that changes the game, and so counts as an action (GH-6, GH-7)."""


@register
class Hall(Rules):
    """The Gilded Hall: inventories, the Croupier, packs, trades and gifts, in phases."""

    kind = "hall"
    title = "The Gilded Hall"
    Settings = HallSettings
    State = HallState
    default_channel = "#game-actions"
    # The Hall also owns the channels where proposals, requests for justice and judge
    # candidacies are posted (GH-20, GH-31, GH-34: governance.py).
    channels = ("#proposals", "#request-for-justice", "#judge-elections")
    open_to_all = True
    commands = COMMANDS

    def start(self, ctx: Context, players: list[str], settings: Any, start: datetime) -> HallState:
        """Open a cycle; the players given are joined at the opening (``phase-1``)."""
        if len({name.casefold() for name in players}) != len(players):
            raise Rejected("a player is listed twice", rule="GH-6")
        hall_settings = self.settings_of(settings)
        # GH-6 (interpretation): players listed at creation are joined at the opening without
        # having acted, so they are inactive in phase 2 unless they act in phase 1.
        state = HallState(settings=hall_settings, opens_at=start, judge=hall_settings.judge,
                          members=[Member(name=name, joined_phase=1) for name in players])
        ctx.record(events.CycleCreated(players=players, opens_at=state.opens_at.isoformat(),
                                       commitment=ctx.rng.commitment))
        fights.refresh_cards(ctx, state, players)  # GH-18: what help offers needs card counts
        if state.opens_at <= ctx.now:
            # The opening time is now or past: phase 1 runs from it, so that a message sent
            # since then still counts.
            phases.open_first_phase(ctx, state, state.opens_at)
            self._after_step(ctx, state)
        else:
            ctx.set_deadline(phases.deadline_name(1), state.opens_at)
            ctx.post("opening", "hall/opening.txt", "The Gilded Hall opens soon",
                     **phases.opening_context(ctx, state))
            phases.refresh_chips(ctx, state)
        return state

    def ledger_scope(self, game_id: str, state: Any, parent_scope: str | None = None) -> str | None:
        """GH-1: a cycle's inventories are its own, in the scope named after the cycle."""
        return game_id

    def grant(self, ctx: Context, state: Any, name: str, item: str, amount: int) -> HallState:
        """``dealer grant`` into a member's cycle inventory (GH-1): not an action (GH-6); victory checked (GH-8)."""
        economy.grant(ctx, state, name, item, amount)
        self._after_step(ctx, state)
        return state

    def handle(self, ctx: Context, state: Any, actor: str, command: Any) -> HallState:
        """Apply one command sent by ``actor`` at ``ctx.now``."""
        if phases.open_if_due(ctx, state):
            self._after_step(ctx, state)
        if isinstance(command, (ShowInventory, Receipts)):
            self._show_inventory(ctx, state, actor)  # GH-7: looking is not an action
            return state
        phases.require_running(state, ctx.now)
        if isinstance(command, governance.QUERIES):
            governance.show(ctx, state, actor, command)  # looking is not an action
            return state
        if type(command) in governance.ACTIONS:
            # Interpretation: government is not a Hall action (GH-6): no one becomes active.
            governance.ACTIONS[type(command)](ctx, state, actor, command)
            self._after_step(ctx, state)
            return state
        if isinstance(command, Join):
            self._join(ctx, state, actor)
        else:
            if state.member(actor) is None:
                raise Rejected("you have not joined the Hall", rule="GH-6",
                               allowed=["join — take part in this cycle of the Hall (GH-6)"])
            ACTIONS[type(command)](ctx, state, actor, command)
        gifts.count_action(ctx, state, actor)
        self._after_step(ctx, state)
        return state

    def on_message(self, ctx: Context, state: Any, message: MessageTaken) -> HallState | None:
        """A proposal, a request or a candidacy (GH-20, GH-31, GH-34) is taken whole."""
        if phases.open_if_due(ctx, state):
            self._after_step(ctx, state)
        if not governance.take_message(ctx, state, message, self.is_command_line,
                                       phases.require_running):
            return None
        self._after_step(ctx, state)
        return state

    def takes_whole(self, channel: str) -> bool:
        """Only the government's channels hold whole messages (GH-20, GH-31, GH-34)."""
        return governance.takes_whole(channel)

    def on_edit(self, ctx: Context, state: Any, edit: EditSent) -> HallState:
        """GH-22: an edited proposal is void at its tally."""
        governance.on_change(ctx, state, edit)
        return state

    def on_delete(self, ctx: Context, state: Any, deletion: DeletionSent) -> HallState:
        """GH-22: a deleted proposal is void; a deleted candidacy is withdrawn."""
        governance.on_change(ctx, state, deletion)
        return state

    def on_reaction(self, ctx: Context, state: Any, reaction: ReactionSent) -> HallState:
        """GH-20, GH-32, GH-34: 👍 and 👎 on a proposal, a poll or a candidacy are votes."""
        governance.on_reaction(ctx, state, reaction)
        return state

    def message_window(self, deadline: str) -> datetime | None:
        """GH-34: an election's tie-break reads each candidate's first message of the week."""
        return elections.week_of_deadline(deadline)

    def on_deadline(self, ctx: Context, state: Any, name: str) -> HallState:
        """A phase boundary, or the tally of a vote (a proposal, a confidence poll, an election)."""
        if governance.on_deadline(ctx, state, name):
            self._after_step(ctx, state)
            return state
        number = phases.phase_number(name)
        if state.status == "finished" or number != state.phase + 1:
            ctx.record(events.DeadlineIgnored(name=name, phase=state.phase, status=state.status))
            return state
        if number == 1:
            phases.open_first_phase(ctx, state, ctx.now)
        else:
            phases.next_phase(ctx, state)
        self._after_step(ctx, state)
        return state

    def summary(self, state: Any) -> Summary:
        """Status, members, chips per member, winner, and the phase's details."""
        return Summary(
            status=state.status,
            players=[m.name for m in state.members],
            scores=dict(state.chips),
            winner=state.winner,
            detail={
                "phase": state.phase,
                "phase_ends_at": format_utc(state.phase_ends_at) if state.phase_ends_at else None,
                "inactive": [m.name for m in state.members if m.inactive],
                "open_offers": [o.id for o in state.offers],
                "victory_chips": state.settings.victory_chips,
                "judge": state.judge,
                "proposals": [governance.open_view(state, p) for p in state.proposals],
                "adopted": [a.model_dump(mode="json") for a in state.adopted],
            },
            settings=state.settings.model_dump(mode="json"),
        )

    # The government's record reads only these events (governance.record_view).
    record_events = ("proposal.", "votes.", "ruling.")

    def record_view(self, events: list[tuple[str, dict[str, Any]]], summary: Summary) -> dict[str, Any]:
        """``dealer game show``: the proposals, the adopted texts, the Judge and the rulings."""
        return governance.record_view(events, summary)

    def on_child_action(self, ctx: Context, state: Any, child_id: str, actor: str) -> HallState:
        """GH-6, GH-7: a command in one of the cycle's Exoptosis matches is a Hall action."""
        if state.status == "running" and state.member(actor) is not None:
            gifts.count_action(ctx, state, actor)
            fights.refresh_cards(ctx, state, [actor])
            self._after_step(ctx, state)
        return state

    def on_child_finished(self, ctx: Context, state: Any, child_id: str, summary: Summary) -> HallState:
        """A battle or duel ended (GH-18, GH-19); chips won may win the cycle (GH-8)."""
        fights.child_finished(ctx, state, child_id, summary)
        self._after_step(ctx, state)
        return state

    def _join(self, ctx: Context, state: HallState, actor: str) -> None:
        """GH-6: a new member is active in the phase it joins (``join`` itself is an action)."""
        if state.member(actor) is not None:
            raise Rejected("you are already in the Hall", rule="GH-6", allowed=[])
        state.members.append(Member(name=actor, joined_phase=state.phase, joined_at=ctx.now))
        # GH-1: the inventory in this cycle starts now, with the cycle's starting items only.
        starting = economy.give_starting_items(ctx, state, actor)
        state.log.append(Happening(kind="joined", actor=actor, items=starting))
        ctx.record(events.Joined(player=actor, phase=state.phase))
        ctx.reply(actor, "confirmation", "hall/joined.txt", "Welcome to the Gilded Hall",
                  name=actor, phase=state.phase, phase_ends_at=state.phase_ends_at,
                  members=[m.name for m in state.members], starting=starting,
                  **inventory(ctx.ledger, ctx.scope.player(actor)))

    def _show_inventory(self, ctx: Context, state: HallState, actor: str) -> None:
        member = state.member(actor)
        ctx.reply(actor, "inventory", "hall/inventory.txt", "Your inventory",
                  name=actor, member=member is not None, status=state.status,
                  inactive=bool(member and member.inactive),
                  gifted=member.gifted if member else None,
                  offers=trades.offers_of(state, actor),
                  **inventory(ctx.ledger, ctx.scope.player(actor)))

    def _after_step(self, ctx: Context, state: HallState) -> None:
        phases.check_victory(ctx, state)  # GH-8: after any step
        if state.status == "finished":
            governance.lapse(ctx, state)  # open votes lapse with the cycle
        phases.refresh_chips(ctx, state)
        fights.refresh_cards(ctx, state)
