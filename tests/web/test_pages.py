"""The status page over a store holding a played game of each kind (both backends), through
the ASGI app: its JSON equals the shared read views, its figures are the rules' own, and no
page or answer shows anything not yet public (docs/WEB.md, WEB-1 to WEB-4)."""

from __future__ import annotations

import re
import warnings
from html import unescape
from typing import Any

import pytest

from played import MARKUP_HORSE, MARKUP_PROPOSAL, SECRET_HAND
from dealer import views
from dealer.store import queries as Q
from dealer.store.models import Game

pytest.importorskip("starlette")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from dealer.web import create_app  # noqa: E402

GAMES = ["r1", "r2", "derby", "derby2", "h1", "h2", "h3", "h2-duel-1", "h2-duel-2"]
PLAYERS = ["alice", "bob", "carol", "dave"]


@pytest.fixture(scope="module")
def client(played: Any) -> TestClient:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TestClient(create_app(played.sessions))


def every_answer(client: TestClient) -> dict[str, str]:
    """Every page and JSON answer of the played store, by path."""
    paths = ["/"] + [f"/games/{g}" for g in GAMES] + [f"/api/games/{g}" for g in GAMES]
    paths += ["/games/h1?epoch=0", "/games/h1?epoch=1"]
    paths += [f"/players/{p}" for p in PLAYERS] + [f"/api/players/{p}" for p in PLAYERS]
    answers = {}
    for path in paths:
        answer = client.get(path)
        assert answer.status_code == 200, path
        answers[path] = answer.text
    return answers


def test_the_json_is_the_public_view_and_the_standings_are_the_rules(played: Any, client: TestClient) -> None:
    for game in GAMES:
        assert client.get(f"/api/games/{game}").json() == played.read(lambda s: views.public_game_view(s, game))
        full = played.read(lambda s: views.game_view(s, game))
        shown = client.get(f"/api/games/{game}").json()
        for key in ("id", "kind", "status", "players", "scores", "winner", "settings"):
            assert shown[key] == full[key], (game, key)
    # SR-11: the scripted roulette ends 570 to 440 (game.finished); the page's standings
    # cells carry the same numbers.
    html = client.get("/games/r1").text
    assert cells(html, "data-score") == {"alice": "570", "bob": "440"}
    assert cells(client.get("/games/h2").text, "data-score") == {"alice": "7", "bob": "3", "carol": "5", "dave": "5"}
    for name in PLAYERS:
        assert client.get(f"/api/players/{name}").json() == played.read(lambda s: views.player_view(s, name))


def test_the_front_page_lists_running_games_by_deadline(played: Any, client: TestClient) -> None:
    front = played.read(views.front_page)
    # derby2's betting window closes at 04:51; r2's first reminder is 6 h before round 1
    # ends (02:00 + 24 h); then h2's and h3's phase 2 and the open duel's setup window
    # (01:03 + 24 h).
    assert [(g["id"], g["next_deadline"]) for g in front["running"]] == [
        ("derby2", "2027-01-04T04:51:00Z"), ("r2", "2027-01-04T20:00:00Z"),
        ("h2", "2027-01-05T00:00:00Z"), ("h3", "2027-01-05T00:00:00Z"),
        ("h2-duel-2", "2027-01-05T01:03:00Z")]
    assert [g["id"] for g in front["others"]] == ["h2-duel-1", "derby", "r1", "h1"]
    few = played.read(lambda s: views.front_page(s, others_limit=2))
    assert ([g["id"] for g in few["others"]], few["older"]) == (["h2-duel-1", "derby"], 2)
    assert 'href="/games/h2-duel-2"' in client.get("/").text


def test_the_roulette_chart_ends_at_the_ledgers_chips(played: Any) -> None:
    page = played.read(lambda s: views.game_page(s, "r1"))["roulette"]
    wallet = {p: played.read(lambda s: views.player_view(s, p))["chips"] for p in ("alice", "bob")}
    # Both were given 100 for the roulette and 50 for the races; alice bet 10 + 99 in the
    # derby and won 117 there, bob bet nothing: the rest of each wallet is the roulette's.
    assert page["chips"] == {"alice": wallet["alice"] - 50 + 109 - 117, "bob": wallet["bob"] - 50}
    assert page["series"][0] == {"round": 0, "points": {"alice": 0, "bob": 0}, "chips": {"alice": 100, "bob": 100}}
    assert [s["round"] for s in page["series"]] == list(range(11))
    assert page["series"][-1]["points"] == {"alice": 570, "bob": 440}
    # Round 1 (SR-8): alice's gold roulette (30/10/0), bob bet 40 on gold: alice 30, bob 40
    # plus the 20-point bonus; bob's gold roulette, alice bet silver: bob 30 + 20.
    first = page["rounds"][0]
    assert first["points"] == {"alice": 30, "bob": 110}
    assert [(r["preparer"], r["preparer_points"], r["bettor_points"]) for r in first["roulettes"]] == [
        ("alice", 30, 60), ("bob", 50, 0)]


def test_an_active_roulette_shows_its_layout_not_its_colour(played: Any, client: TestClient) -> None:
    active = played.read(lambda s: views.game_page(s, "r2"))["roulette"]["active"]
    # SR-7: carol prepared silver 25/15, dave black 35/5: the layouts, never the colours.
    assert [(a["preparer"], a["gold"], a["silver"], a["black"]) for a in active] == [
        ("carol", 25, 15, 0), ("dave", 35, 5, 0)]
    assert all("colour" not in a for a in active)
    html = client.get("/games/r2").text
    assert "layout gold 25, silver 15, black 0" in html and "black</td>" not in html


def test_the_race_track_and_the_exoptosis_table(played: Any, client: TestClient) -> None:
    derby = played.read(lambda s: views.game_page(s, "derby"))
    detail = derby["game"]["detail"]
    assert [(lane["name"], lane["position"]) for lane in derby["races"]["lanes"]] == [
        (h["name"], h["position"]) for h in detail["horses"]]
    assert len(derby["races"]["actions"]) == detail["actions"] == 25
    assert derby["races"]["actions"][-1]["positions"] == [h["position"] for h in detail["horses"]]
    assert derby["races"]["payments"] == [
        {"to": "alice", "bettor": "alice", "amount": 117, "reason": "winnings", "horse": "Thunder Hooves"}]
    duel = played.read(lambda s: views.game_page(s, "h2-duel-1"))["exoptosis"]
    assert (duel["result"], duel["winner"], duel["pool"], duel["last"]) == ("won", "alice", 4, "10 of Clubs")
    assert duel["order"] == ["bob", "alice"]
    assert duel["revealed"] == {"alice": ["7 of Clubs", "8 of Clubs", "9 of Clubs", "10 of Clubs"],
                                "bob": ["2 of Hearts", "3 of Hearts", "4 of Hearts", "5 of Hearts", "6 of Hearts"]}
    html = client.get("/games/h2-duel-1").text
    assert 'id="last-card">10 of Clubs<' in html and 'id="pool">4<' in html


def test_nothing_private_appears_anywhere(played: Any, client: TestClient) -> None:
    answers = every_answer(client)
    unrevealed = played.read(lambda s: [
        seed.server_seed for g in GAMES for seed in Q.game_seeds(s, g) if seed.revealed_at is None])
    assert len(unrevealed) >= 3  # h2's phase, the open duel's and derby2's
    secret_cards = ["Jack of Diamonds", "Queen of Diamonds", "King of Diamonds", "Ace of Diamonds"]
    gift = played.read(lambda s: Q.game_events_of_type(s, "h2", "gift"))[0].data
    for path, text in answers.items():
        for seed in unrevealed:
            assert seed not in text, path  # GH-40: WEB-2
        if path == "/" or any(k in path for k in ("h2", "carol", "dave")):  # (h1's packs hold diamonds)
            for card in secret_cards + ["card:JD", SECRET_HAND]:
                assert card not in text, path  # GH-10: WEB-3
        assert "reminders off" not in text and "lucky horseshoe" not in text.split("h1")[0]  # WEB-1
        if "r1" not in path and path not in ("/players/alice", "/players/bob"):  # r1 is resolved
            assert "prepare silver" not in text and "prepare black" not in text, path  # SR-6
        assert "received a gift from dave" not in text, path  # WEB-4: h2's phase is open
        assert "gift alice" not in text and "balances" not in text, path
    assert gift["giver"] == "dave" and "gifted" not in answers["/players/dave"]


def test_player_text_is_escaped(client: TestClient) -> None:
    html = client.get("/games/derby2").text
    assert MARKUP_HORSE not in html and "<b>Bold</b>" not in html
    assert "&lt;b&gt;Bold&lt;/b&gt; &amp; &#34;Co&#34;" in html
    assert client.get("/api/games/derby2").json()["detail"]["horses"][0]["name"] == MARKUP_HORSE
    missing = client.get("/games/<script>x</script>")
    assert missing.status_code == 404 and "<script>x" not in missing.text
    assert client.get("/api/players/nobody").status_code == 404


def test_the_per_player_history_lists_public_actions(client: TestClient) -> None:
    html = unescape(client.get("/players/carol").text)
    assert "bet 20 chips on Red Rum" in html  # OR: a public bet
    assert "received a gift from alice: 10 of Clubs (holo), Queen of Spades" in html  # h1's phase 1 is over
    assert "challenged dave to duel 2" in html
    alice = unescape(client.get("/players/alice").text)
    assert "round 1: prepared gold (gold 30, silver 10, black 0): 30 points" in alice
    assert "played 10 of Clubs" in alice and "won the match (won) and the pool of 4 chips" in alice


def cells(html: str, attribute: str) -> dict[str, str]:
    """``{name: text}`` of the cells carrying ``attribute="name"``."""
    return {unescape(k): v for k, v in re.findall(rf'{attribute}="([^"]+)">([^<]*)<', html)}


def test_a_store_that_does_not_answer_is_a_503(tmp_path: Any) -> None:
    from dealer.store.db import make_engine, session_factory

    gone = session_factory(make_engine(f"sqlite:///{tmp_path / 'no-schema.db'}"))  # no tables
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client = TestClient(create_app(gone))
    assert client.get("/games/r1").status_code == 503
    assert "does not answer" in client.get("/").text
    assert client.get("/api/changes").json() == {
        "error": "the game store does not answer right now; try again in a moment"}


def test_the_halls_proposals_with_live_tallies_and_rulings(played: Any, client: TestClient) -> None:
    from dealer.games import rules_for

    shown = client.get("/api/games/h3").json()
    # GH-20, GH-21: carol's Standard proposal, open until phase 2 ends; alice 👍, dave 👎.
    assert [(p["number"], p["status"], p["author"], p["for"], p["against"], p["ends_at"])
            for p in shown["proposals"]] == [(1, "open", "carol", 1, 1, "2027-01-06T00:00:00Z")]
    assert shown["judge"] == "alice"
    assert [(r["number"], r["judge"], r["text"]) for r in shown["rulings"]] == [(1, "alice", "yes")]
    # The view reads only the government's events; the record equals the whole history's.
    whole = played.read(lambda s: rules_for("hall").record_view(
        [(e.type, e.data) for e in Q.game_events(s, "h3")],
        rules_for("hall").summary(views.game_state(s.get(Game, "h3"))[1])))
    assert {k: shown[k] for k in whole} == whole
    html = client.get("/games/h3").text
    row = html.split('data-proposal="1">')[1].split("</tr>")[0]
    assert re.findall(r'<td class="num">(\d+)</td>', row) == ["1", "1", "1"]
    assert 'class="countdown" data-until="2027-01-06T00:00:00Z"' in row
    assert MARKUP_PROPOSAL not in html and "&lt;script&gt;alert(&#39;p&#39;)&lt;/script&gt; Shorter phases" in row
    assert "Ruling 1 by" in html and ": yes" in html


def test_the_deadline_history_reads_as_sentences(played: Any, client: TestClient) -> None:
    """Issue 34, item 5: the history showed raw internal events (``deadline.set · deadline:
    round-1 · due_at: 2027-01-...T...:00.000000Z``); each line is a sentence, to the minute."""
    for game in ("r1", "derby", "h2"):
        html = client.get(f"/games/{game}").text
        history = html[html.index('id="history"'):]
        history = history[:history.index("</ol>")]
        items = re.findall(r"<li>(.*?)</li>", history, re.S)
        assert items, game
        text = unescape(re.sub(r"<[^>]+>", "", " ".join(items)))
        assert not re.search(r"\b(deadline|admin)\.\w+", text), text[:300]
        assert not re.search(r"\d{2}:\d{2}:\d{2}|\.\d{6}|due_at|T\d{2}:", text), text[:300]
    r1 = client.get("/games/r1").text
    assert re.search(r"round-10 set for \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", unescape(r1))
    assert "round-10 came" in unescape(r1)


def test_every_running_game_has_a_deadline_or_says_what_it_waits_for(played: Any) -> None:
    """Issue 34, item 7, over a game of each kind as played."""
    for game in GAMES:
        view = played.read(lambda s: views.game_view(s, game))
        if view["status"] == "running":
            assert view["deadlines"] or view["waiting"], game
