"""Read views: what the CLI prints and the status page shows, read from the store.

Nothing here writes. Each view is a plain dict (JSON as printed by ``--json``); the admin
writes live in :mod:`dealer.shell.admin`.

- :mod:`~dealer.views.admin`: the admin's views (``dealer player show``, ``game show``,
  ``game list``, ``inbox list``, ``outbox list``);
- :mod:`~dealer.views.status`: the status page's (``dealer serve``), which show only what
  is public (WEB-1 to WEB-4).

Callers write ``from dealer.views import game_view`` or ``views.front_page``: this module
names the public views of both, so a caller need not know which module holds a view.
"""

from __future__ import annotations

from dealer.views.admin import (
    NotFound, count_failed, find_player, game_state, game_view, ledger_scope, list_games,
    list_messages, list_posts, message_view, own_inventories, player_view, post_view,
    setting_text, settings_help,
)
from dealer.views.status import (
    change_mark, front_page, game_page, player_page, public_game_view, public_player_view,
)

__all__ = [
    "NotFound", "change_mark", "count_failed", "find_player", "front_page", "game_page",
    "game_state", "game_view", "ledger_scope", "list_games", "list_messages", "list_posts",
    "message_view", "own_inventories", "player_page", "player_view", "post_view",
    "public_game_view", "public_player_view", "setting_text", "settings_help",
]
