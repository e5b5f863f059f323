"""A stranger's Discord messages are stored only within a rate (issue 36, item 7: 303 DMs
of one unknown account were 303 stored rows); a player's never are limited."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from sqlalchemy import func, select

from dealer.inbox.base import InboxMessage
from dealer.settings import Settings
from dealer.shell.admin import add_player, link_account
from dealer.shell.passes import Dealer
from dealer.shell.platforms import store_heard
from dealer.shell.strangers import PER_STRANGER, WINDOW, StrangerLimit
from dealer.store.models import Inbound

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)


def dms(account: str, count: int, start: int) -> list[InboxMessage]:
    return [InboxMessage(id=str(start + n), sender=f"discord:{account}", channel="pm", body=f"hello {n}",
                         sent_at=T0) for n in range(count)]


def stored_from(dealer: Dealer, account: str) -> int:
    with dealer.sessions() as session:
        return session.scalar(select(func.count()).select_from(Inbound).where(
            Inbound.sender == f"discord:{account}")) or 0


def test_a_strangers_303_dms_store_five_and_a_players_all(database_url: str, tmp_path: Path) -> None:
    settings = Settings(home=str(tmp_path), database_url=database_url, _env_file=None)
    dealer = Dealer(settings)
    clock = [0.0]
    limit = StrangerLimit(clock=lambda: clock[0])
    try:
        with dealer.sessions.begin() as session:
            add_player(session, "alice", T0)
            link_account(session, "alice", "discord:111111111111111111", T0)
        for n in range(303):  # one event each, as the gateway hands them
            store_heard(dealer.engine, settings, dms("666666666666666666", 1, 1000 + n), {}, T0, strangers=limit)
        store_heard(dealer.engine, settings, dms("111111111111111111", 40, 5000), {}, T0, strangers=limit)
        assert stored_from(dealer, "666666666666666666") == PER_STRANGER
        assert stored_from(dealer, "111111111111111111") == 40
        assert limit.dropped == 303 - PER_STRANGER
        # A window later the stranger is heard again, within the same rate.
        clock[0] = WINDOW + 1
        store_heard(dealer.engine, settings, dms("666666666666666666", 10, 9000), {}, T0 + timedelta(minutes=11), strangers=limit)
        assert stored_from(dealer, "666666666666666666") == 2 * PER_STRANGER
    finally:
        dealer.dispose()


def test_all_strangers_together_are_limited_too() -> None:
    limit = StrangerLimit(per_stranger=5, all_strangers=20, clock=lambda: 0.0)
    allowed = [limit.allow(f"discord:{n}") for n in range(50)]
    assert allowed.count(True) == 20 and allowed[:20] == [True] * 20
