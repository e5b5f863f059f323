"""Whatever an unsigned or forged request holds, the webhook doors refuse it before the
store is touched (hypothesis)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from hypothesis import given, settings, strategies as st

from dealer.inbox.discourse import signature
from dealer.shell.discourse import DiscourseHooks
from dealer.shell.webhooks import WebhookInbox, sign

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)


class Untouchable:
    """An engine that fails the test if anything reaches for it."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the store was touched ({name}) by a request that is not signed")


header_text = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=80)


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=300), stamp=header_text, delivery=header_text, forged=header_text)
def test_the_inbox_refuses_what_is_not_signed_with_its_secret(body: bytes, stamp: str, delivery: str, forged: str) -> None:
    door = WebhookInbox(Untouchable(), "the-secret", clock=lambda: NOW)  # type: ignore[arg-type]
    headers = {"x-dealer-timestamp": stamp, "x-dealer-delivery": delivery, "x-dealer-signature": forged}
    if forged == sign("the-secret", stamp, delivery, body):
        return  # hypothesis will not find an HMAC; this only keeps the property honest
    assert door.receive(headers, body).status == 401
    # Signed with another secret: refused the same way.
    headers["x-dealer-signature"] = sign("another-secret", stamp, delivery, body)
    assert door.receive(headers, body).status == 401


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=300), forged=header_text, event=header_text)
def test_discourse_deliveries_not_signed_with_its_secret_are_refused(body: bytes, forged: str, event: str) -> None:
    hooks = DiscourseHooks(Untouchable(), "the-secret", {}, "dealer_bot", clock=lambda: NOW)  # type: ignore[arg-type]
    for header in (forged, signature("another-secret", body)):
        answer = hooks.receive({"x-discourse-event-signature": header, "x-discourse-event": event}, body)
        assert answer.status == 401
