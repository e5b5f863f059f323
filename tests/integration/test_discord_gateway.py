"""A gateway that stops with an error (issue 36: nothing one sender sends stops an inbound
source): started again with a fresh client after a backoff, what was said meanwhile caught up,
and `dealer health` saying it is down meanwhile; a refused login is not retried."""

from __future__ import annotations

import logging
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from discord_harness import RACEWAY, add_players, tables  # noqa: E402

from dealer.health import check_health  # noqa: E402
from dealer.shell.admin import create_game, grant  # noqa: E402
from dealer.views import game_view  # noqa: E402

T0 = datetime(2026, 12, 1, 18, 0, tzinfo=timezone.utc)
ALICE = 210000000000000001


@pytest.fixture
def table(database_url: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    yield from tables(database_url, tmp_path, T0)


def _said(caplog) -> list[str]:  # type: ignore[no-untyped-def]
    # Errors only: the first connection's "ready" may be logged late on a loaded machine.
    return [r.getMessage() for r in caplog.records
            if r.name == "dealer.inbox.discord" and r.levelno >= logging.ERROR]


def _problems(t) -> list[str]:  # type: ignore[no-untyped-def]
    return check_health(t.dealer.engine, t.now).problems


def test_a_payload_discord_py_cannot_parse_stops_the_gateway_only_until_its_restart(table, caplog) -> None:  # type: ignore[no-untyped-def]
    t = table(connect=False)
    t.connect(retry_first=0.05)
    add_players(t, T0, (("Alice", ALICE),), 50)
    t.admin(lambda s: (grant(s, "Alice", "2C", 1, T0), create_game(s, "races", "derby", T0)))
    first = t.link.gateway.client
    t.fake.hold()  # the restarted gateway waits to connect: the gap below is certain
    t.now = T0 + timedelta(minutes=1)
    with caplog.at_level(logging.ERROR, "dealer.inbox.discord"):
        t.fake.dispatch("MESSAGE_CREATE", {"id": "1"})  # no channel: discord.py's parser raises
        t.until(lambda: any("down since 2026-12-01 18:01 UTC" in p for p in _problems(t)), "health to tell")
    assert _said(caplog) == [
        "the Discord gateway stopped (KeyError: 'channel_id'); started again in 0.05 s"]
    gap = t.fake.user_says(RACEWAY, ALICE, "sit\nhorse Comet card 2C")
    t.fake.release()
    # A fresh client, and the catch-up after its READY brings back what it could not hear.
    assert t.stored(gap["id"]).sent_at == T0 + timedelta(minutes=1)
    assert t.link.gateway.client is not first and t.fake.identifies == 2
    t.until(lambda: not _problems(t), "health to be well again")
    after = t.say(ALICE, "ready", T0 + timedelta(minutes=2))
    assert t.stored(after["id"]).body == "ready"
    t.run(T0 + timedelta(minutes=3))
    assert "Alice" in t.admin(lambda s: game_view(s, "derby"))["players"]
    assert any("Comet" in p["content"] for p in t.fake.posts(RACEWAY))


def test_a_refused_login_is_not_retried_and_health_says_so(table, caplog) -> None:  # type: ignore[no-untyped-def]
    t = table(connect=False)
    t.fake.token = "another-token"  # the bot's token was reset: Discord answers 401
    with caplog.at_level(logging.ERROR, "dealer.inbox.discord"):
        t.connect(first_catch_up=False, retry_first=0.01)
        t.link.gateway.thread.join(20)
    assert not t.link.gateway.thread.is_alive() and t.fake.identifies == 0
    assert [said.split(":")[0] for said in _said(caplog)] == ["Discord refused the gateway (LoginFailure"]
    [problem] = _problems(t)
    assert problem.startswith("Discord refused the gateway's login at 2026-12-01 18:00 UTC")


def test_the_backoff_doubles_to_its_cap_and_a_stop_ends_the_wait(caplog) -> None:  # type: ignore[no-untyped-def]
    import asyncio
    import threading

    from dealer.inbox.discord import GatewayThread

    class Failing:
        """A client whose every start raises, as discord.py does on a payload it cannot parse."""

        lasting = 0.0  # seconds connected before it raises

        async def start(self, token: str) -> None:
            await asyncio.sleep(self.lasting)
            raise ValueError("unparsable")

        async def close(self) -> None:
            pass

    def failing(backoff: tuple[float, float], stops: int) -> tuple[GatewayThread, list[bool]]:
        downs: list[bool] = []
        enough = threading.Event()

        def down(exc: BaseException, refused: bool) -> None:
            downs.append(refused)
            if len(downs) == stops:
                enough.set()

        gateway = GatewayThread(Failing, "token", backoff, down).start()
        assert enough.wait(20)
        return gateway, downs

    with caplog.at_level(logging.ERROR, "dealer.inbox.discord"):
        gateway, downs = failing((0.01, 0.04), 4)
        gateway.stop(20)
        assert [m.rpartition(" in ")[2] for m in _said(caplog)][:4] == ["0.01 s", "0.02 s", "0.04 s", "0.04 s"]
        assert not gateway.thread.is_alive() and downs[:4] == [False] * 4
        caplog.clear()
        Failing.lasting = 0.05  # longer than the longest wait: each wait is short again
        gateway, downs = failing((0.01, 0.04), 3)
        gateway.stop(20)
        assert [m.rpartition(" in ")[2] for m in _said(caplog)][:3] == ["0.01 s"] * 3
        Failing.lasting = 0.0
        gateway, downs = failing((600.0, 600.0), 1)  # a stop ends the 10 minutes' wait
        gateway.stop(20)
        assert not gateway.thread.is_alive() and downs == [False]
