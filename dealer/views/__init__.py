"""Read views: what the CLI prints (:mod:`~dealer.views.admin`) and the status page shows
(:mod:`~dealer.views.status`, public only), as plain dicts; nothing here writes. This module
names the public views of both."""

from __future__ import annotations

from dealer.views.admin import (
    NotFound, find_player, game_state, game_view, ledger_scope, list_games,
    list_messages, list_posts, message_view, own_inventories, player_view, post_view,
    setting_text, settings_help,
)
from dealer.views.status import (
    change_mark, front_page, game_page, player_page, public_game_view, public_player_view,
)
