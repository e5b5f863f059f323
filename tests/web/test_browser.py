"""The status page in a real browser (Debian's Chromium, driven by Playwright) against a real
uvicorn server on 127.0.0.1 over a played store: deadlines in the viewer's own zone (two
zones), the standings equal the JSON, the fairness check in the browser turns a tampered
draw red, the page refreshes itself, and a screenshot of each page is saved
(``DEALER_TEST_ARTIFACTS``, default ``test-artifacts/``). Kept few: each test opens pages
of one browser."""

from __future__ import annotations

import os
import shutil
import socket
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Iterator
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import update

from played import NOW

sync_api = pytest.importorskip("playwright.sync_api")
pytest.importorskip("uvicorn")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    if os.environ.get("DEALER_TEST_REQUIRE_TOOLS"):  # .ci/run: never pass without them
        pytest.fail("Debian's chromium is not installed: .ci/run installs it", pytrace=False)
    pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)", allow_module_level=True)

ARTIFACTS = Path(os.environ.get("DEALER_TEST_ARTIFACTS", "test-artifacts")) / "web"


@pytest.fixture(scope="module")
def site(played_sqlite: Any) -> Iterator[str]:
    """A real server of the played store on a free port; its base URL."""
    from dealer import web

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = web.serve_in_thread(played_sqlite.sessions, "127.0.0.1", port, poll_seconds=0.3)
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)  # waiting for a real server socket to listen, not for game time
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                              args=["--no-sandbox", "--disable-gpu"])
        yield launched
        launched.close()


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Tokyo"])
def test_deadlines_in_the_viewers_zone_and_the_standings(browser: Any, site: str, zone: str) -> None:
    context = browser.new_context(timezone_id=zone, viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(f"{site}/games/h2")
    due = page.locator("time.when").first
    utc = datetime.fromisoformat(due.get_attribute("datetime").replace("Z", "+00:00"))
    assert utc == datetime(2027, 1, 5, 0, 0, tzinfo=ZoneInfo("UTC"))
    local = utc.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M")
    assert due.inner_text().startswith(local)  # 2027-01-04 19:00 EST / 2027-01-05 09:00 GMT+9
    assert page.locator(".countdown").first.inner_text().startswith("(")
    api = page.request.get(f"{site}/api/games/h2").json()
    shown = {c.get_attribute("data-score"): int(c.inner_text()) for c in page.locator("[data-score]").all()}
    assert shown == api["scores"]
    if zone == "Asia/Tokyo":
        for path in ("/", "/games/r1", "/games/derby", "/games/h1", "/games/h2", "/games/h2-duel-1",
                     "/games/h2-duel-2", "/players/alice"):
            page.goto(site + path)
            page.wait_for_selector(".verdict[data-done]", state="attached", timeout=20000) if path.startswith("/games") else None
            shot(page, path.strip("/").replace("/", "-") or "front")
    context.close()


def test_the_browser_checks_every_draw_and_a_tampered_one_turns_red(browser: Any, site: str, played_sqlite: Any) -> None:
    from dealer.store.models import Draw

    page = browser.new_page()
    page.goto(f"{site}/games/r1")
    page.wait_for_selector(".verdict[data-done]", timeout=20000)
    assert page.locator(".check.bad").count() == 0
    assert page.locator('.check.ok[data-check="receipt"]').count() == 38  # 19 preparations (bob missed one, SR-10), 19 bets on them
    page.goto(f"{site}/games/derby")
    page.wait_for_selector(".verdict[data-done]", timeout=20000)
    checked = page.locator('.check.ok[data-check="draw"]').count()
    assert checked > 0 and page.locator(".check.bad").count() == 0
    assert page.locator(".verdict").inner_text() == f"All {checked + 1} checks passed in your browser."

    def tamper(delta: int) -> None:
        with played_sqlite.sessions.begin() as session:
            session.execute(update(Draw).where(Draw.game_id == "derby", Draw.counter == 3)
                            .values(result=Draw.result + delta))

    tamper(1)
    try:
        page.goto(f"{site}/games/derby")
        page.wait_for_selector(".verdict[data-done]", timeout=20000)
        bad = page.locator(".check.bad")
        assert bad.count() == 1
        assert page.locator('tr[data-draw="3"] .check').get_attribute("data-result") == "bad"
        assert "1 of" in page.locator(".verdict").inner_text() and "FAILED" in page.locator(".verdict").inner_text()
        shot(page, "games-derby-tampered")
    finally:
        tamper(-1)
    page.close()


def test_the_page_refreshes_itself_when_the_game_changes(browser: Any, site: str, played_sqlite: Any) -> None:
    page = browser.new_page()
    page.goto(f"{site}/games/h2-duel-2")
    assert page.locator(".hand").count() == 0
    harness = played_sqlite.harness
    harness.send("dave", "hand 2S 3S 4S 5S", NOW + timedelta(minutes=1), game="h2-duel-2")
    harness.run(NOW + timedelta(minutes=2))  # both chose: the hands are revealed (GH-10)
    page.wait_for_selector(".hand .card", timeout=10000)  # no reload: the page polled
    assert "Jack of Diamonds" in page.locator('[data-seat="carol"]').inner_text()
    page.close()


# What a table at phone width shows: nothing wider than its section (hidden columns to be
# found by swiping sideways), every cell inside the window, each with its column's name.
_FITS = """(table) => {
  const section = table.closest('section');
  const cells = [...table.querySelectorAll('tbody td')];
  const outside = cells.filter(c => { const r = c.getBoundingClientRect();
                                      return r.width > 0 && (r.left < 0 || r.right > window.innerWidth + 1); });
  return {table: table.scrollWidth, section: section.clientWidth, page: document.documentElement.scrollWidth,
          width: window.innerWidth, outside: outside.length, cells: cells.length,
          unlabelled: cells.filter(c => !c.dataset.label).length,
          header: getComputedStyle(table.querySelector('thead')).display};
}"""


@pytest.mark.parametrize(("path", "selector"), [("/games/r1", "table.rounds"), ("/games/derby", "table.positions")])
def test_wide_tables_reflow_at_phone_width(browser: Any, site: str, path: str, selector: str) -> None:
    """Issue 34, item 5: at 390 px the roulette's rounds and the race's positions were cut
    off at the section's edge; they reflow, each row a block of labelled cells."""
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(site + path)
    seen = page.locator(selector).evaluate(_FITS)
    assert seen["cells"] > 0 and seen["unlabelled"] == 0, seen
    assert seen["table"] <= seen["section"] and seen["page"] <= seen["width"], seen
    assert seen["outside"] == 0 and seen["header"] == "none", seen
    shot(page, f"{path.strip('/').replace('/', '-')}-390px")
    # A wide window keeps the table as a table.
    page.set_viewport_size({"width": 1200, "height": 900})
    assert page.locator(selector).evaluate(_FITS)["header"] == "table-header-group"
    context.close()
