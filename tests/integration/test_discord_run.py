"""`dealer run` end to end with the Discord gateway: the real command in a subprocess,
the fake Discord in this process. A player's messages arrive through the gateway, the
daemon applies them and posts back in the channel and in DMs; a message sent while the
daemon is down is caught up by `dealer run --once` before its pass."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from fake_discord import FakeDiscord
from dealer.shell.admin import add_player, create_game, grant, link_account
from dealer.store.db import make_engine, session_factory

RACEWAY = 111111111111111111
ALICE = 210000000000000001


@pytest.fixture
def fake():  # type: ignore[no-untyped-def]
    f = FakeDiscord().start()
    f.add_channel(RACEWAY)
    f.add_user(ALICE, "alice", "Alice")
    yield f
    f.stop()


def _cursor(database_url: str) -> str | None:
    from dealer.store import queries as Q

    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            return Q.cursor(connection, "discord", f"channel/{RACEWAY}")
    finally:
        engine.dispose()


def test_dealer_run_serves_discord_through_the_gateway(fake: FakeDiscord, database_url: str, tmp_path: Path) -> None:
    engine = make_engine(database_url)
    now = datetime.now(timezone.utc)
    with session_factory(engine).begin() as session:
        add_player(session, "Alice", now, chips=20)
        link_account(session, "Alice", f"discord:{ALICE}", now)
        grant(session, "Alice", "2C", 1, now)
        grant(session, "Alice", "3C", 1, now)
        create_game(session, "races", "derby", now)
    engine.dispose()
    env = {
        **os.environ,
        "DEALER_HOME": str(tmp_path),
        "DEALER_DATABASE_URL": database_url,
        "DEALER_ROUTES": f"#the-raceway=discord:channel/{RACEWAY};pm=discord:dm",
        "DEALER_DISCORD_TOKEN": fake.token,
        "DEALER_DISCORD_API_URL": fake.api_url,
        "DEALER_DISCORD_GATEWAY_URL": fake.gateway_url,
        "DEALER_POLL_INTERVAL": "30",
        "DEALER_DEADLINE_OVERRIDES": "",
    }
    env.pop("DEALER_FAULT", None)
    daemon = subprocess.Popen([sys.executable, "-m", "dealer.cli", "run"], env=env, cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert fake.connected.wait(30), "the daemon never connected to the gateway"
        # Wait for the first catch-up, which sets the channel's cursor (from now on).
        assert fake.wait_for(lambda: _cursor(database_url) is not None)
        fake.user_says(RACEWAY, ALICE, "sit\nhorse Comet card 2C")
        # The public post of the seating arrives at once (the gateway wakes the daemon; the
        # poll interval is 30 s), and nothing private was needed.
        assert fake.wait_for(lambda: any("Comet" in p["content"] for p in fake.posts(RACEWAY))), \
            [p["content"] for p in fake.posts(RACEWAY)]
        fake.user_says(None, ALICE, "help", dm=True)
        assert fake.wait_for(lambda: bool(fake.dm_posts(ALICE)))
        assert "derby" in fake.dm_posts(ALICE)[0]["content"]
    finally:
        daemon.send_signal(signal.SIGTERM)
        out, _ = daemon.communicate(timeout=60)
    assert daemon.returncode == 0, out
    assert "Discord gateway ready" in out and "dealer stopped" in out

    # While the daemon is down, Alice changes her horse; `run --once` reads it from the
    # channel's history before its pass, applies it and posts.
    fake.session = None  # no gateway is connected: nothing is dispatched
    fake.user_says(RACEWAY, ALICE, "horse Comet card 3C")
    once = subprocess.run([sys.executable, "-m", "dealer.cli", "run", "--once"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert once.returncode == 0, once.stdout + once.stderr
    from sqlalchemy import select

    from dealer.store.models import Inbound

    engine = make_engine(database_url)
    with session_factory(engine)() as session:
        rows = [(r.body, r.status, r.sent_at) for r in session.scalars(select(Inbound).order_by(Inbound.id))]
    engine.dispose()
    assert rows[-1][:2] == ("horse Comet card 3C", "applied"), (rows, once.stdout)


def test_dealer_discord_alone_stores_what_the_gateway_hears(fake: FakeDiscord, database_url: str, tmp_path: Path) -> None:
    """`dealer discord`: the gateway in a process of its own, storing for a daemon elsewhere."""
    from sqlalchemy import select

    from dealer.store.models import Inbound

    env = {
        **os.environ,
        "DEALER_HOME": str(tmp_path),
        "DEALER_DATABASE_URL": database_url,
        "DEALER_ROUTES": f"#the-raceway=discord:channel/{RACEWAY};pm=discord:dm",
        "DEALER_DISCORD_TOKEN": fake.token,
        "DEALER_DISCORD_API_URL": fake.api_url,
        "DEALER_DISCORD_GATEWAY_URL": fake.gateway_url,
    }
    gateway = subprocess.Popen([sys.executable, "-m", "dealer.cli", "discord"], env=env, cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert fake.connected.wait(30), "dealer discord never connected"
        assert fake.wait_for(lambda: _cursor(database_url) is not None)
        said = fake.user_says(RACEWAY, ALICE, "sit")

        def stored() -> bool:
            engine = make_engine(database_url)
            try:
                with session_factory(engine)() as session:
                    return session.scalars(select(Inbound).where(Inbound.external_id == said["id"])).first() is not None
            finally:
                engine.dispose()

        assert fake.wait_for(stored)
    finally:
        gateway.send_signal(signal.SIGTERM)
        out, _ = gateway.communicate(timeout=60)
    assert gateway.returncode == 0, out
    assert "Discord gateway running" in out
