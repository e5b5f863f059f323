"""The status page's views: the admin's, less what is not public yet (docs/WEB.md, "Nothing
private", WEB-1 to WEB-4: no private text, seeds and sealed submissions once revealed,
hands once revealed, a Hall member's acts once their phase is over)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from dealer import deadline_log
from dealer import ledger as L
from dealer.cards import display
from dealer.clock import iso
from dealer.games import rules_for
from dealer.store import queries as Q
from dealer.store.models import Game
from dealer.text import player_key
from dealer.views.admin import game_state, game_view, list_games, player_view


def public_game_view(session: Session, game_id: str) -> dict[str, Any]:
    """``/api/games/ID``: :func:`game_view` (the same keys) with nothing not yet public."""
    view = game_view(session, game_id)
    for seed in view["seeds"]:
        if seed["server_seed"] is None:
            seed["client_seeds"] = None  # WEB-2: revealed with the server seed
    for deadline in view["deadlines"]:
        deadline["error"] = None  # WEB-1: dealer's own error text is for the host
    if view["kind"] == "exoptosis" and view["detail"].get("phase") == "setup":
        view["detail"]["hands"] = {}  # WEB-3 (GH-10)
    if view["kind"] == "hall" and view["status"] == "running":
        # WEB-4: the host's grants of the current phase are told in its summary (GH-1).
        game = session.get(Game, game_id)
        assert game is not None
        started = game_state(game)[1].phase_started_at
        view["history"] = [
            h for h in view["history"]
            if h["type"] != "admin.grant" or (started is not None and h["at"] < iso(started))
        ]
    return view


def public_player_view(session: Session, name: str) -> dict[str, Any]:
    """``/api/players/NAME``: :func:`player_view` (the wallet is public by contract)."""
    return player_view(session, name)


def front_page(session: Session, others_limit: int = 50) -> dict[str, Any]:
    """``/``: the running games, soonest deadline first, then the newest ``others_limit`` others."""
    games = list_games(session)
    titles = {kind: rules_for(kind).title for kind in {g["kind"] for g in games}}
    for g in games:
        g["title"] = titles[g["kind"]]
    running = sorted(
        (g for g in games if g["status"] == "running"),
        key=lambda g: (g["next_deadline"] is None, g["next_deadline"] or "", g["id"]),
    )
    others = [g for g in games if g["status"] != "running"]
    return {"running": running, "others": others[:others_limit],
            "older": max(len(others) - others_limit, 0)}


def game_page(session: Session, game_id: str, epoch: int | None = None) -> dict[str, Any]:
    """``/games/ID``: the public view, its kind's picture, its matches and parent, and the
    fairness record the browser checks."""
    view = public_game_view(session, game_id)
    game = session.get(Game, game_id)
    assert game is not None
    rules, state = game_state(game)
    kind = game.kind
    page: dict[str, Any] = {"game": view, "parent": game.parent_id,
                            "history": deadline_log.lines(view["history"][-50:])}
    page["matches"] = [
        {"id": row.id, "kind": row.kind, "status": row.status, "created_at": iso(row.created_at)}
        for row in Q.child_games(session, game.id)
    ]
    if kind == "roulette":
        page["roulette"] = _roulette_page(session, game.id, view)
        page["roulette"]["active"] = _active_roulettes(state)
    elif kind == "races":
        page["races"] = _races_page(session, game.id, view)
    elif kind == "hall":
        page["hall"] = _hall_page(state, view)
    elif kind == "exoptosis":
        page["exoptosis"] = _exoptosis_page(state)
        revealed = Q.game_events_of_type(session, game.id, "revealed")  # GH-10: public since
        page["exoptosis"]["revealed"] = {
            name: [display(i) for i in items] for name, items in revealed[0].data["hands"].items()
        } if revealed else {}
    page["fairness"] = _fairness(session, game.id, view, epoch)
    return page


def _roulette_page(session: Session, game_id: str, view: dict[str, Any]) -> dict[str, Any]:
    """Each resolved round and each player's points and chips after it (SR-8 to SR-11)."""
    events = Q.events_of_types(
        session, [game_id],
        ["game.created", "round.resolved", "preparation.missed", "game.finished"])
    players = view["players"]
    chips: dict[str, int] = {p: 0 for p in players}
    points: dict[str, int] = {p: 0 for p in players}
    series = []
    rounds = []
    for e in events:
        data = e.data
        if e.type == "game.created":
            chips = {p: int(data["stacks"].get(p, 0)) for p in players}
            series.append({"round": 0, "points": dict(points), "chips": dict(chips)})
        elif e.type == "preparation.missed":  # SR-10: the fee goes to the house
            chips[data["player"]] -= int(data.get("fee", 0))
        elif e.type == "round.resolved":
            transfer = data.get("transfer")
            if transfer:  # SR-9: black's chips, from payer to payee
                chips[transfer["payer"]] -= int(transfer["paid"])
                chips[transfer["payee"]] += int(transfer["paid"])
            for name, fee in (data.get("fees") or {}).items():  # SR-9: black fees, to the house
                chips[name] -= int(fee)
            points = {p: int(data["points"].get(p, 0)) for p in players}
            rounds.append({
                "round": data["round"],
                "roulettes": [
                    {"preparer": r["preparer"], "bettor": r["bettor"], "colour": r["colour"],
                     "layout": {c: r[c] for c in ("gold", "silver", "black")},
                     "bet": r["bet"], "preparer_points": r["preparer_points"] + r["preparer_bonus"],
                     "bettor_points": r["bettor_points"] + r["bettor_bonus"],
                     "black_paid": transfer["paid"] if transfer and r["colour"] == "black" else 0}
                    for r in data["roulettes"]
                ],
                "points": dict(points),
            })
            series.append({"round": data["round"], "points": dict(points), "chips": dict(chips)})
        elif e.type == "game.finished" and data.get("transfer") and data.get("winner"):
            # SR-11: the winner takes floor(lead / 10) chips from the loser.
            loser = next(p for p in players if p != data["winner"])
            chips[data["winner"]] += int(data["transfer"])
            chips[loser] -= int(data["transfer"])
            if series:
                series[-1] = {**series[-1], "chips": dict(chips)}
    if series and view["scores"] is not None:
        # The chart and the standings have one source: its last point is the standings.
        # A missed preparation (SR-10: 60 points to the opponent) counts at its deadline,
        # after the round it follows was resolved, and is in no round.resolved yet.
        series[-1] = {**series[-1], "points": {p: int(view["scores"].get(p, 0)) for p in players}}
    return {"rounds": rounds, "series": series, "chips": chips,
            "chart": _chart(series, players)}


def _active_roulettes(state: Any) -> list[dict[str, Any]]:
    """The current round's roulettes as announced (SR-7); never the sealed winning colour."""
    from dealer.games.roulette.posts import roulette_card

    if state.status != "running" or state.phase < 1:
        return []
    return [roulette_card(r, state.settings.layout_public)
            for name in state.players if (r := state.active.get(name)) is not None]


def _chart(series: list[dict[str, Any]], players: list[str]) -> dict[str, Any]:
    """SVG polylines (points and chips by round) in a 0..100 box: no script needed."""
    out: dict[str, Any] = {"rounds": len(series) - 1 if series else 0, "lines": []}
    if not series:
        return out
    last = max(len(series) - 1, 1)
    for figure in ("points", "chips"):
        top = max([1] + [s[figure][p] for s in series for p in players])
        for i, name in enumerate(players):
            dots = " ".join(
                f"{round(j * 100 / last, 2)},{round(100 - s[figure][name] * 100 / top, 2)}"
                for j, s in enumerate(series))
            out["lines"].append({"figure": figure, "player": name, "index": i, "dots": dots,
                                 "top": top, "last": series[-1][figure][name]})
    return out


_RACE_ACTIONS = ("seating.closed", "race.action", "lap.action", "table.finished")


def _races_page(session: Session, game_id: str, view: dict[str, Any]) -> dict[str, Any]:
    """The field, each horse's position after every race action (OR-7 to OR-9) and the payout (OR-10, OR-11)."""
    detail = view["detail"]
    horses = [h["name"] for h in detail["horses"]]
    actions = []
    payments: list[dict[str, Any]] = []
    for e in Q.events_of_types(session, [game_id], _RACE_ACTIONS):
        if e.type in ("race.action", "lap.action"):
            actions.append({"n": len(actions) + 1, "kind": "race" if e.type == "race.action" else "lap",
                            "by": e.data.get("by"), "card": display("card:" + e.data["card"]),
                            "moved": e.data.get("moved", []), "positions": e.data["positions"]})
        elif e.type == "table.finished":
            payments = e.data.get("payments", [])
    length = max(int(detail.get("length") or 1), 1)
    lanes = [
        {"name": h["name"], "owner": h["owner"], "card": display("card:" + h["card"]),
         "position": h["position"], "percent": round(min(h["position"], length) * 100 / length, 2),
         "winner": h["name"] in detail.get("winners", [])}
        for h in detail["horses"]
    ]
    return {"horses": horses, "lanes": lanes, "actions": actions, "payments": payments,
            "length": length}


def _hall_page(state: Any, view: dict[str, Any]) -> dict[str, Any]:
    """The cycle's phase, members and open duels (GH-19); WEB-4: no offer nor inventory beyond chips."""
    return {
        "phase": state.phase,
        "phase_ends_at": iso(state.phase_ends_at) if state.phase_ends_at else None,
        "victory_chips": state.settings.victory_chips,
        "members": [
            {"name": m.name, "chips": state.chips.get(m.name, 0), "joined_phase": m.joined_phase,
             "inactive": m.inactive}
            for m in sorted(state.members, key=lambda m: (-state.chips.get(m.name, 0), m.name))
        ],
        "challenges": [
            {"id": c.id, "challenger": c.challenger, "challenged": list(c.challenged),
             "accepted": list(c.accepted)}
            for c in state.challenges
        ],
        "battlers": list(state.battlers),
    }


def _exoptosis_page(state: Any) -> dict[str, Any]:
    """Each seat's stake, its hand once revealed (WEB-3), the turn, last card and pool (GH-11 to GH-16)."""
    revealed = state.phase != "setup"
    seats = []
    for seat in state.seats:
        seats.append({
            "name": seat.name, "stake": seat.stake, "out": seat.out,
            "hand": [display(h.item) for h in seat.hand] if revealed and seat.hand else None,
            "cards": len(seat.hand) if revealed and seat.hand else None,
            "current": seat.name == state.current,
        })
    return {
        "phase": state.phase, "fight": state.settings.fight, "seats": seats,
        "order": list(state.order), "turn": state.turn, "current": state.current,
        "turn_ends_at": iso(state.turn_ends_at) if state.turn_ends_at else None,
        "last": display("card:" + state.last) if state.last else None,
        "played": [display(h.item) for h in state.played],
        "pool": sum(s.stake for s in state.seats),
        "result": state.result, "winner": state.winner, "reward": state.reward,
    }


def _fairness(session: Session, game_id: str, view: dict[str, Any], epoch: int | None) -> dict[str, Any]:
    """The revealed seeds, one epoch's draws, and resolved rounds' sealed submissions."""
    seeds = Q.revealed_seeds(session, game_id)
    epochs = [s.epoch for s in seeds]
    chosen = next((s for s in seeds if s.epoch == epoch), seeds[-1] if seeds else None)
    draws = []
    if chosen is not None:
        draws = [
            {"epoch": d.epoch, "counter": d.counter, "n": d.n, "result": d.result,
             "client": d.client, "purpose": d.purpose}
            for d in Q.epoch_draws(session, game_id, chosen.epoch)
        ]
    seed = None if chosen is None else {
        "epoch": chosen.epoch, "server_seed": chosen.server_seed,
        "commitment": chosen.commitment, "client_seeds": list(chosen.client_seeds),
    }
    receipts: list[dict[str, Any]] = []
    commitments: list[dict[str, Any]] = []
    for rnd in view["sealed"]:
        for r in rnd.get("roulettes", []):
            commitments.append({"round": rnd["round"], "preparer": r["preparer"], "colour": r["colour"],
                                "salt": r["salt"], "commitment": r["commitment"]})
            receipts.append({"round": rnd["round"], "player": r["preparer"], "salt": r["salt"],
                             "text": r["prep_canonical"], "receipt": r["prep_receipt"]})
        for b in rnd.get("bets", []):
            receipts.append({"round": rnd["round"], "player": b["player"], "salt": b["salt"],
                             "text": b["canonical"], "receipt": b["receipt"]})
    unrevealed = [s["epoch"] for s in view["seeds"] if s["server_seed"] is None]
    return {"epochs": epochs, "seed": seed, "draws": draws, "receipts": receipts,
            "commitments": commitments, "unrevealed": unrevealed,
            "game_id": game_id}


# Each public action of a player, by the kind and type of its event: who acted and the
# words. Events not named here (a command's text, a sealed submission, a chosen hand) are
# never shown (WEB-1, WEB-2, WEB-3).
def _cards(items: list[str]) -> str:
    return ", ".join(display(i) for i in items) or "nothing"


def _items(moved: dict[str, int]) -> str:
    return ", ".join(f"{n} {display(i)}" if n != 1 or i in (L.CHIPS, L.VERTEBRAE) else display(i)
                     for i, n in moved.items()) or "nothing"


_ACTIONS: dict[tuple[str, str], Any] = {
    ("roulette", "round.resolved"): lambda d: [
        (r["preparer"], f"round {d['round']}: prepared {r['colour']} (gold {r['gold']}, silver "
                        f"{r['silver']}, black {r['black']}): {r['preparer_points'] + r['preparer_bonus']} points")
        for r in d["roulettes"]
    ] + [
        (r["bettor"], f"round {d['round']}: bet gold {r['bet']['gold']}, silver {r['bet']['silver']}, "
                      f"black {r['bet']['black']} on {r['preparer']}'s roulette ({r['colour']}): "
                      f"{r['bettor_points'] + r['bettor_bonus']} points")
        for r in d["roulettes"]
    ],
    ("roulette", "preparation.missed"): lambda d: [
        (d["player"], f"missed the preparation for round {d['round']} (SR-10): paid {d['fee']} chips")],
    ("races", "seated"): lambda d: [(d["player"], "sat at the table")],
    ("races", "horse.entered"): lambda d: [
        (d["player"], f"entered the horse {d['name']} ({display('card:' + d['card'])})")],
    ("races", "ready"): lambda d: [(d["player"], "declared ready")],
    ("races", "bet"): lambda d: [(d["bettor"], f"bet {d['amount']} chips on {d['horse']}")],
    ("races", "race.action"): lambda d: [
        (d["by"], f"raced: {display('card:' + d['card'])} moved {', '.join(d['moved']) or 'nobody'}")],
    ("races", "lap.action"): lambda d: [
        (d["by"], f"lapped: {display('card:' + d['card'])} moved {', '.join(d['moved']) or 'nobody'}")],
    ("races", "table.finished"): lambda d: [
        (p["to"], f"was paid {p['amount']} chips ({p['reason']})") for p in d.get("payments", [])],
    ("hall", "joined"): lambda d: [(d["player"], f"joined the Hall in phase {d['phase']}")],
    ("hall", "bought"): lambda d: [
        (d["player"], f"bought {d['count']} {d['ware']} for {d['cost']} vertebrae"
                      + (f": {_cards(d['cards'])}" if d.get("cards") else ""))],
    ("hall", "pack_opened"): lambda d: [
        (d["player"], f"opened a {d['pack']} pack: {_cards(d['cards'])}")],
    ("hall", "gift"): lambda d: [
        (d["giver"], f"gifted {d['receiver']}: {_cards(d['cards'])}"),
        (d["receiver"], f"received a gift from {d['giver']}: {_cards(d['cards'])}")],
    ("hall", "trade"): lambda d: [
        (d["offerer"], f"traded with {d['target']} (offer {d['id']}): gave {_items(d['gives'])} for {_items(d['wants'])}"),
        (d["target"], f"traded with {d['offerer']} (offer {d['id']}): gave {_items(d['wants'])} for {_items(d['gives'])}")],
    ("hall", "duel.challenged"): lambda d: [
        (d["challenger"], f"challenged {', '.join(d['challenged'])} to duel {d['id']}")],
    ("hall", "duel.answered"): lambda d: [(d["player"], f"answered duel {d['id']}: {d['verb']}")],
    ("hall", "victory"): lambda d: [(d["winner"], f"won the cycle with {d['chips']} chips (GH-8)")],
    ("exoptosis", "bet"): lambda d: [(d["player"], f"{d['verb']}: paid {d['paid']} (stake {d['stake']})")],
    ("exoptosis", "played"): lambda d: [(d["player"], f"played {display(d['card'])}")],
    ("exoptosis", "ended"): lambda d: (
        [(d["winner"], f"won the match ({d['result']}) and the pool of {d['pool']} chips")]
        if d.get("winner") else []),
}
_HALL_PRIVATE_UNTIL_SUMMARY = {"joined", "bought", "pack_opened", "gift", "trade"}


def player_page(session: Session, name: str, limit: int = 100) -> dict[str, Any]:
    """``/players/NAME``: the public view, games and at most ``limit`` newest public actions,
    read newest first in batches: a long Hall costs what a new one does."""
    view = public_player_view(session, name)
    player = view["name"]
    rows = Q.game_rows(session, view["games"])
    games = [{"id": r.id, "kind": r.kind, "status": r.status, "parent": r.parent_id,
              "title": rules_for(r.kind).title} for r in rows]
    kinds = {r.id: r.kind for r in rows}
    closed_before = {}  # WEB-4: a running Hall's happenings of its current phase are not public yet
    for r in rows:
        if r.kind == "hall" and r.status == "running":
            game = session.get(Game, r.id)
            assert game is not None
            _, state = game_state(game)
            closed_before[r.id] = state.phase_started_at
    types = sorted({t for (_, t) in _ACTIONS})
    actions: list[dict[str, Any]] = []
    more = False
    for e in Q.events_newest_first(session, list(kinds), types):
        describe = _ACTIONS.get((kinds[e.game_id], e.type))
        if describe is None:
            continue
        if (e.type in _HALL_PRIVATE_UNTIL_SUMMARY and e.game_id in closed_before
                and (closed_before[e.game_id] is None or e.at >= closed_before[e.game_id])):
            continue
        # An event may name the player twice (a gift to oneself is refused, but a roulette
        # round names each player as preparer and bettor): its lines keep their order.
        mine = [{"at": iso(e.at), "game": e.game_id, "kind": kinds[e.game_id], "what": words}
                for actor, words in reversed(describe(e.data))
                if actor is not None and player_key(actor) == player_key(player)]
        if len(actions) + len(mine) > limit:
            more = True
            break
        actions += mine
    return {"player": view, "games": games, "actions": actions, "more": more}


def change_mark(session: Session) -> str:
    """What an open status page polls: changes whenever a game or a deadline changes."""
    return Q.change_mark(session)
