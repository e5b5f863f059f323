"""How much a post says: brief (the default) or full (``DEALER_POST_DETAIL``, ``|detail=``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping
from urllib.parse import quote

BRIEF = "brief"
FULL = "full"
DETAILS = (BRIEF, FULL)
PM = "pm"
DEFAULT_ROUTE = "*"


@dataclass(frozen=True)
class PostDetail:
    """The detail of each post: the setting, the routes' own, and the status page's address."""

    default: str = BRIEF
    routes: Mapping[str, str] = field(default_factory=dict)
    """A route's own detail by its channel (``pm``, ``#the-raceway``, ``*`` the default route)."""
    web_url: str = ""

    def for_post(self, channel: str, recipient: str | None) -> str:
        """The detail of a post in ``channel`` (private: to ``recipient``, by the ``pm`` route)."""
        route = PM if recipient is not None else channel
        return self.routes.get(route) or self.routes.get(DEFAULT_ROUTE) or self.default

    def game_page(self, game_id: str | None) -> str:
        """The game's page on the status page (empty without ``DEALER_WEB_URL``)."""
        if not self.web_url or not game_id:
            return ""
        return f"{self.web_url.rstrip('/')}/games/{quote(game_id, safe='')}"


_policy = PostDetail()


def set_post_detail(policy: PostDetail) -> None:
    """Use ``policy`` for every post rendered from now on (the shell, from its settings)."""
    global _policy
    _policy = policy


def post_detail() -> PostDetail:
    """The policy in force."""
    return _policy


def detail_for(channel: str, recipient: str | None) -> str:
    """The detail of a post in ``channel`` to ``recipient`` under the policy in force."""
    return _policy.for_post(channel, recipient)


def from_settings(default: str, routes: Mapping[str, str | None], web_url: str) -> PostDetail:
    """The policy of ``DEALER_POST_DETAIL``, each route's ``detail=`` and ``DEALER_WEB_URL``."""
    return PostDetail(default, {c: d for c, d in routes.items() if d}, web_url.strip())


def reply_detail() -> str:
    """The detail of a private reply (the ``pm`` route's, else the setting's)."""
    return _policy.for_post(PM, "")
