"""The signed webhook inbox (``POST /inbox``): forged, stale and replayed deliveries are
refused; a valid one is stored exactly once, and 202 comes only once it is stored."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import func, select

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

from dealer.shell.admin import add_player, create_game  # noqa: E402
from dealer.shell.webhooks import WebhookInbox, create_app, sign, webhook_routes  # noqa: E402
from dealer.store.models import Inbound, WebhookDelivery  # noqa: E402

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
SECRET = "s3cret-shared-with-the-bridge"


class Door:
    """The app on a controlled clock, and a bridge that signs what it sends."""

    def __init__(self, harness, secret: str = SECRET) -> None:  # type: ignore[no-untyped-def]
        self.now = T0
        self.woken = 0
        self.inbox = WebhookInbox(harness.dealer.engine, secret, clock=lambda: self.now, wake=self._wake)
        self.client = TestClient(create_app(webhook_routes(self.inbox)))

    def _wake(self) -> None:
        self.woken += 1

    def post(self, message: dict, delivery: str, *, at: datetime | None = None, secret: str = SECRET,
             signature: str | None = None, body: bytes | None = None):  # type: ignore[no-untyped-def]
        raw = body if body is not None else json.dumps(message).encode("utf-8")
        stamp = str(int((at or self.now).timestamp()))
        headers = {
            "X-Dealer-Timestamp": stamp,
            "X-Dealer-Delivery": delivery,
            "X-Dealer-Signature": signature or sign(secret, stamp, delivery, raw),
            "Content-Type": "application/json",
        }
        return self.client.post("/inbox", content=raw, headers=headers)


def setup_tally(h) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob"):
            add_player(session, name, T0, chips=10)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"])
    h.admin(setup)


def stored(h) -> list[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    return h.admin(lambda s: [(r.source, r.external_id, r.body) for r in s.scalars(select(Inbound).order_by(Inbound.id))])


ADD = {"id": "bridge-1", "sender": "alice", "channel": "pm", "body": "add 3", "sent_at": "2026-12-01T10:00:30Z"}


def test_the_signature_is_an_hmac_of_timestamp_delivery_and_body() -> None:
    # HMAC-SHA256 keyed "k" of b"1764583200.d1.{}", as `openssl dgst -sha256 -hmac k` gives it.
    assert sign("k", "1764583200", "d1", b"{}") == (
        "sha256=ded277dff6157471577d1c8c79a8083e22562dbd94b7683bf15f07865a4f9382")


def test_a_valid_delivery_is_stored_then_answered_202_and_applied(harness) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    door = Door(harness)
    answer = door.post(ADD, "d-1")
    assert answer.status_code == 202
    assert answer.json() == {"stored": "new", "id": "bridge-1"}
    assert stored(harness) == [("webhook", "bridge-1", "add 3")]
    assert door.woken == 1
    report = harness.run(T0 + timedelta(minutes=1))
    assert report.messages == 1 and report.ok
    [reply] = [p for p in harness.pms("alice") if p["kind"] == "confirmation"]
    assert "3" in reply["body"]


def test_a_valid_delivery_sent_twice_is_stored_exactly_once(harness) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    door = Door(harness)
    assert door.post(ADD, "d-1").status_code == 202
    # The same request again (a replay of the delivery): refused, nothing stored.
    again = door.post(ADD, "d-1")
    assert again.status_code == 409 and "replay" in again.json()["error"]
    # The bridge retries the message under a new delivery id: accepted as a duplicate.
    retry = door.post(ADD, "d-2")
    assert retry.status_code == 202 and retry.json()["stored"] == "duplicate"
    assert stored(harness) == [("webhook", "bridge-1", "add 3")]
    assert door.woken == 1
    harness.run(T0 + timedelta(minutes=1))
    assert len([p for p in harness.pms("alice") if p["kind"] == "confirmation"]) == 1


def test_a_forged_signature_is_refused_and_nothing_stored(harness) -> None:  # type: ignore[no-untyped-def]
    door = Door(harness)
    wrong_key = door.post(ADD, "d-1", secret="not-the-secret")
    assert wrong_key.status_code == 401 and "signature does not match" in wrong_key.json()["error"]
    # A body altered after signing (the amount changed in flight).
    raw = json.dumps(ADD).encode()
    stamp = str(int(T0.timestamp()))
    good = sign(SECRET, stamp, "d-2", raw)
    altered = door.post(ADD, "d-2", signature=good, body=raw.replace(b"add 3", b"add 9"))
    assert altered.status_code == 401
    # The delivery id changed under a valid signature of another.
    moved = door.post(ADD, "d-3", signature=good)
    assert moved.status_code == 401
    unsigned = door.client.post("/inbox", content=raw)
    assert unsigned.status_code == 401
    assert unsigned.json()["error"] == ("unsigned request: missing X-Dealer-Timestamp, "
                                        "X-Dealer-Delivery, X-Dealer-Signature")
    assert stored(harness) == []
    assert harness.admin(lambda s: s.scalar(select(func.count()).select_from(WebhookDelivery))) == 0


def test_a_stale_or_early_timestamp_is_refused(harness) -> None:  # type: ignore[no-untyped-def]
    door = Door(harness)
    stale = door.post(ADD, "d-1", at=T0 - timedelta(minutes=5, seconds=1))
    assert stale.status_code == 401
    assert stale.json()["error"] == ("the timestamp is 301 s away from the server's clock; "
                                     "at most 300 s are allowed")
    early = door.post(ADD, "d-2", at=T0 + timedelta(minutes=5, seconds=1))
    assert early.status_code == 401
    raw = json.dumps(ADD).encode()
    far = door.client.post("/inbox", content=raw, headers={
        "X-Dealer-Timestamp": "999999999999", "X-Dealer-Delivery": "d-far",
        "X-Dealer-Signature": sign(SECRET, "999999999999", "d-far", raw)})
    assert far.status_code == 401 and "away from the server's clock" in far.json()["error"]
    words = door.client.post("/inbox", content=raw, headers={
        "X-Dealer-Timestamp": "soon", "X-Dealer-Delivery": "d-w",
        "X-Dealer-Signature": sign(SECRET, "soon", "d-w", raw)})
    assert words.status_code == 401 and "whole seconds" in words.json()["error"]
    assert stored(harness) == []
    # Exactly at the edge of the window, either way, is accepted.
    assert door.post(ADD, "d-3", at=T0 - timedelta(minutes=5)).status_code == 202
    assert door.post({**ADD, "id": "bridge-2"}, "d-4", at=T0 + timedelta(minutes=5)).status_code == 202


def test_a_replay_after_the_window_is_refused_for_its_timestamp(harness) -> None:  # type: ignore[no-untyped-def]
    door = Door(harness)
    assert door.post(ADD, "d-1").status_code == 202
    # Ten minutes later the delivery id is forgotten, but the captured request is stale.
    raw = json.dumps(ADD).encode()
    stamp = str(int(T0.timestamp()))
    door.now = T0 + timedelta(minutes=11)
    replay = door.client.post("/inbox", content=raw, headers={
        "X-Dealer-Timestamp": stamp, "X-Dealer-Delivery": "d-1",
        "X-Dealer-Signature": sign(SECRET, stamp, "d-1", raw)})
    assert replay.status_code == 401
    # A new delivery purges ids older than twice the window.
    assert door.post({**ADD, "id": "bridge-2"}, "d-2").status_code == 202
    kept = harness.admin(lambda s: sorted(s.scalars(select(WebhookDelivery.delivery_id))))
    assert kept == ["d-2"]


def test_bad_messages_get_a_clear_error_and_store_nothing(harness) -> None:  # type: ignore[no-untyped-def]
    door = Door(harness)
    missing = door.post({"id": "x", "body": "add 1", "sent_at": "2026-12-01T10:00:00Z"}, "d-1")
    assert missing.status_code == 400 and "sender" in missing.json()["error"]
    number = door.post({**ADD, "sent_at": 1764583200}, "d-2")
    assert number.status_code == 400 and "ISO-8601" in number.json()["error"]
    not_json = door.post({}, "d-3", body=b"add 3")
    assert not_json.status_code == 400 and "not valid JSON" in not_json.json()["error"]
    ahead = door.post({**ADD, "sent_at": "2026-12-03T10:00:00Z"}, "d-4")
    assert ahead.status_code == 422 and "more than a day after" in ahead.json()["error"]
    big = door.post({}, "d-5", body=b" " * 70000)
    assert big.status_code == 413
    assert stored(harness) == []
    # A delivery refused for its message may be sent again, corrected, with the same id.
    assert door.post({**ADD, "id": "x"}, "d-1").status_code == 202


def test_the_inbox_needs_a_secret(harness) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="DEALER_WEBHOOK_SECRET"):
        WebhookInbox(harness.dealer.engine, "")
