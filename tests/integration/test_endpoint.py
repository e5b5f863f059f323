"""The HTTP endpoint beside ``dealer run``: served by uvicorn on a real port, a signed
delivery to ``POST /inbox`` stored and the loop woken at once; bad settings refused."""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

sys.path.insert(0, str(Path(__file__).parent))
from mailservers import free_port  # noqa: E402

from dealer.settings import Settings  # noqa: E402
from dealer.shell.admin import add_player, create_game  # noqa: E402
from dealer.shell.endpoint import endpoint_routes, parse_listen, start_side  # noqa: E402
from dealer.shell.passes import Dealer  # noqa: E402
from dealer.shell.webhooks import sign  # noqa: E402


def test_the_endpoint_serves_the_signed_inbox_and_wakes_the_loop(database_url: str, tmp_path: Path) -> None:
    port = free_port()
    settings = Settings(home=str(tmp_path), database_url=database_url, _env_file=None,
                        webhook_listen=f"127.0.0.1:{port}", webhook_secret="k")
    dealer = Dealer(settings)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    with dealer.sessions.begin() as session:
        add_player(session, "alice", now, chips=10)
        add_player(session, "bob", now, chips=10)
        create_game(session, "tally", "t1", now, players=["alice", "bob"])
    side = start_side(dealer)
    try:
        body = json.dumps({"id": "b1", "sender": "alice", "body": "add 2",
                           "sent_at": now.isoformat().replace("+00:00", "Z")}).encode()
        stamp = str(int(time.time()))
        headers = {"X-Dealer-Timestamp": stamp, "X-Dealer-Delivery": "d1",
                   "X-Dealer-Signature": sign("k", stamp, "d1", body)}
        answer = None
        for _ in range(500):  # the server starting up in its thread
            try:
                answer = httpx.post(f"http://127.0.0.1:{port}/inbox", content=body, headers=headers, timeout=10)
                break
            except httpx.ConnectError:
                time.sleep(0.01)
        assert answer is not None and answer.status_code == 202, answer and answer.text
        assert dealer.wake.is_set()
        report = dealer.run_pass()
        assert report.messages == 1 and report.ok
        replies = [json.loads(p.read_text()) for p in sorted((tmp_path / "outbox").glob("*.json"))]
        assert [p["kind"] for p in replies if p["recipient"] == "alice"] == ["confirmation"]
        # The other route is off without its secret.
        assert httpx.post(f"http://127.0.0.1:{port}/discourse", content=b"{}").status_code == 404
    finally:
        for part in side:
            part.stop()
        dealer.engine.dispose()


def test_listen_settings() -> None:
    assert parse_listen("0.0.0.0:8081") == ("0.0.0.0", 8081)
    assert parse_listen(":8081") == ("127.0.0.1", 8081)
    with pytest.raises(ValueError, match="write HOST:PORT"):
        parse_listen("8081")
    with pytest.raises(ValueError, match="write HOST:PORT"):
        parse_listen("host:99999")


def test_an_endpoint_with_no_route_is_refused(database_url: str, tmp_path: Path) -> None:
    settings = Settings(home=str(tmp_path), database_url=database_url, _env_file=None,
                        webhook_listen="127.0.0.1:1")
    dealer = Dealer(settings)
    with pytest.raises(ValueError, match="no route is on"):
        endpoint_routes(dealer)
    dealer.engine.dispose()


def test_dealer_run_says_what_is_wrong_with_the_endpoint(cli) -> None:  # type: ignore[no-untyped-def]
    cli.env["DEALER_WEBHOOK_LISTEN"] = "nowhere"
    result = cli("run", ok=False)
    assert result.exit_code != 0
    assert "DEALER_WEBHOOK_LISTEN: write HOST:PORT" in result.output
