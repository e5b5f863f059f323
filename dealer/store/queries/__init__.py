"""Every query of the store: prebuilt Core statements (in capitals) and small query
functions, one module per concern of the code they serve (docs/ARCHITECTURE.md).

Callers write ``from dealer.store import queries as Q``: this module names every public
query, so moving one between modules changes no caller; a test patching what a query reads
patches the module that holds it.
"""

from __future__ import annotations

from dealer.store.queries.admin import (
    add_look_alikes, balance, failed_messages, look_alike_player, messages_with_external_id,
    overrides, pending_deadlines_of, retry_failed,
)
from dealer.store.queries.claims import (
    CLAIM_MESSAGE, DUE, FLUSH_COMMITTED, INSERT_MESSAGE, LOCK_DEADLINE, LOCK_DEADLINES,
    MARK_FIRED, RECORD_OUTCOME, STEP_LOCK_KEY, ClaimedMessage, Due, LockedDeadline,
    claim_messages, due_now, insert_message, messages_sharing_id, next_due_deadline,
    next_timer_deadline, overdue_deadlines, step_lock_alone, step_lock_shared,
)
from dealer.store.queries.delivery import (
    CLAIM_WINDOW, DELIVERED, DELIVERED_UNFLUSHED, FIRST_PAGE_LOCKED, INSERT_POSTS,
    POST_DROPPED, POST_NOT_DELIVERED, UNPARK_DUE, Claim, LockedPost, PagePost, claim_posts,
    count_parked, parked_posts, parts_sent, post_exists, record_part,
)
from dealer.store.queries.platforms import (
    LATEST_MAIL_FROM, LATEST_MESSAGE_IDS, MAIL_OF_MESSAGE, MESSAGE_BY_EXTERNAL_ID,
    POST_BY_EXTERNAL_ID, accounts_of, already_told, cursor, cursor_back, cursors,
    delivery_seen, link_account, linked_accounts, linked_accounts_among, move_cursor, player_of_account,
    player_of_sender, record_delivery, sender_of_message, unlink_account,
)
from dealer.store.queries.routing import (
    GAME_REF, PlayerGame, channels_of_game,
    first_messages, game_began, game_by_id, game_of_target, game_state_row,
    games_on_channel, own_channels, player_games, players_with_games, post_ref,
)
from dealer.store.queries.senders import (
    QUARANTINED, count_quarantined, passphrase_hash, player_of, quarantined_messages,
    release_quarantined, set_passphrase_hash,
)
from dealer.store.queries.sql import (
    equals_any, unindexed,
)
from dealer.store.queries.steps import (
    ACCOUNT_HOLDINGS, BALANCE, CANCEL_DEADLINE, CHANGE_BALANCE, CURRENCIES, GAME_EXISTS,
    HOLDINGS, INSERT_DEADLINE, INSERT_DRAWS, INSERT_EVENTS, INSERT_GAME,
    INSERT_GAME_PLAYERS, INSERT_HOLDING, INSERT_LEDGER_ENTRIES, INSERT_SEED, LOCK_GAME,
    MOVE_DEADLINE, UPDATE_GAME, LockedBalances, LockedGame, balances_of_locked,
    currency_holdings, lock_games, pending_of_locked, remove_game_players, update_epoch,
)
from dealer.store.queries.views import (
    SCOPE_OF, change_mark, child_games, count_failed_messages, epoch_draws,
    events_newest_first, events_of_types, game_deadlines, game_events, game_events_of_type,
    game_events_with_prefix, game_rows, game_seeds, games_newest_first, games_of_player,
    holdings_of, newest_messages, next_deadline_by_game, outbox_posts, players_by_game,
    revealed_seeds,
)

__all__ = [
    "ACCOUNT_HOLDINGS", "BALANCE", "CANCEL_DEADLINE", "CHANGE_BALANCE", "CLAIM_MESSAGE",
    "CLAIM_WINDOW", "CURRENCIES", "DELIVERED", "DELIVERED_UNFLUSHED", "DUE",
    "FIRST_PAGE_LOCKED", "FLUSH_COMMITTED", "GAME_EXISTS", "GAME_REF", "HOLDINGS",
    "INSERT_DEADLINE", "INSERT_DRAWS", "INSERT_EVENTS", "INSERT_GAME",
    "INSERT_GAME_PLAYERS", "INSERT_HOLDING", "INSERT_LEDGER_ENTRIES", "INSERT_MESSAGE",
    "INSERT_POSTS", "INSERT_SEED", "LATEST_MAIL_FROM", "LATEST_MESSAGE_IDS",
    "LOCK_DEADLINE", "LOCK_DEADLINES", "LOCK_GAME", "MAIL_OF_MESSAGE", "MARK_FIRED",
    "MESSAGE_BY_EXTERNAL_ID", "MOVE_DEADLINE", "POST_BY_EXTERNAL_ID", "POST_DROPPED",
    "POST_NOT_DELIVERED", "QUARANTINED", "UNPARK_DUE", "RECORD_OUTCOME", "SCOPE_OF",
    "STEP_LOCK_KEY", "UPDATE_GAME", "Claim", "ClaimedMessage",
    "Due", "LockedBalances", "LockedDeadline", "LockedGame", "LockedPost", "PagePost",
    "PlayerGame", "accounts_of", "add_look_alikes", "already_told", "balance",
    "balances_of_locked", "change_mark", "channels_of_game", "child_games",
    "claim_messages", "claim_posts", "count_failed_messages", "count_parked", "count_quarantined",
    "currency_holdings", "cursor", "cursor_back", "cursors", "delivery_seen", "due_now",
    "epoch_draws", "equals_any", "events_newest_first", "events_of_types",
    "failed_messages", "first_messages", "game_began", "game_by_id", "game_deadlines",
    "game_events", "game_events_of_type", "game_events_with_prefix", "game_of_target",
    "game_rows", "game_seeds", "game_state_row", "games_newest_first", "games_of_player",
    "games_on_channel", "holdings_of", "insert_message", "link_account", "linked_accounts", "linked_accounts_among",
    "lock_games", "look_alike_player", "messages_sharing_id", "messages_with_external_id",
    "move_cursor", "newest_messages", "next_deadline_by_game", "next_due_deadline",
    "next_timer_deadline", "outbox_posts", "overdue_deadlines", "overrides", "own_channels",
    "parked_posts", "parts_sent", "passphrase_hash", "pending_deadlines_of", "pending_of_locked",
    "player_games", "player_of", "player_of_account", "player_of_sender", "players_by_game",
    "players_with_games", "post_exists", "post_ref", "quarantined_messages", "record_delivery",
    "record_part", "release_quarantined", "remove_game_players", "retry_failed", "revealed_seeds",
    "sender_of_message", "set_passphrase_hash", "step_lock_alone",
    "step_lock_shared", "unindexed",
    "unlink_account", "update_epoch",
]
