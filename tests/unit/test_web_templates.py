"""The status page's templates treat every player-chosen text as data (no store needed)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from hypothesis import given, settings, strategies as st
from markupsafe import escape

from dealer.web import _environment


class Tags(HTMLParser):
    """The start tags of a fragment."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)


FRONT = {"running": [], "others": []}


@settings(max_examples=60, deadline=None)
@given(name=st.text(min_size=1, max_size=30))
def test_any_name_is_text_on_the_front_page(name: str) -> None:
    env = _environment(5)
    game = {"id": name, "title": "Off to the Races", "status": "finished", "players": [name],
            "next_deadline": None}
    html = env.get_template("front.html").render(front={"running": [], "others": [game]})
    tags = Tags()
    tags.feed(html.split('<tbody>')[1].split('</tbody>')[0])
    # Only the page's own markup: a row, its cells and the two links (game, player).
    assert tags.tags == ["tr", "td", "a", "td", "td", "td", "a"]
    assert str(escape(name)) in html


@pytest.mark.parametrize("name", ['<script>alert(1)</script>', '"><img src=x onerror=alert(1)>',
                                  "</script><script>x()</script>"])
def test_the_fairness_data_cannot_close_its_script(name: str) -> None:
    env = _environment(5)
    page = {"fairness": {"epochs": [], "seed": None, "draws": [], "receipts": [
        {"round": 1, "player": name, "salt": "00", "text": f"g, {name}, round 1", "receipt": "ff" * 32}],
        "commitments": [], "unrevealed": [], "game_id": "g"}}
    html = env.get_template("_fairness.html").render(page=page, g={"seeds": []})
    data = html.split('id="fairness-data">')[1].split("</script>")[0]
    assert "<" not in data and name not in html
