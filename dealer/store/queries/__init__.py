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
    CLAIM_WINDOW, DELIVERED, FIRST_PAGE_LOCKED, INSERT_POSTS,
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
    GAME_REF, PlayerGame, first_messages, game_began, game_by_id, game_of_target, game_state_row,
    games_on_channel, own_channels, player_games, players_with_games, post_ref,
)
from dealer.store.queries.senders import (
    QUARANTINED, count_quarantined, count_quarantined_like, passphrase_hash, player_of, quarantined_messages,
    release_quarantined, set_passphrase_hash,
)
from dealer.store.queries.sql import (
    equals_any, unindexed,
)
from dealer.store.queries.steps import (
    ACCOUNT_HOLDINGS, BALANCE, CANCEL_DEADLINE, CHANGE_BALANCE, CURRENCIES, GAME_EXISTS,
    INSERT_DEADLINE, INSERT_DRAWS, INSERT_EVENTS, INSERT_GAME,
    INSERT_GAME_PLAYERS, INSERT_HOLDING, INSERT_LEDGER_ENTRIES, INSERT_SEED, LOCK_GAME,
    MOVE_DEADLINE, UPDATE_GAME, LockedBalances, LockedGame, PendingDeadline, balances_of_locked,
    currency_holdings, lock_games, pending_of_locked, remove_game_players, update_epoch,
)
from dealer.store.queries.views import (
    SCOPE_OF, change_mark, child_games, count_failed_messages, epoch_draws,
    events_newest_first, events_of_types, game_deadlines, game_events, game_events_of_type,
    game_events_with_prefix, game_rows, game_seeds, games_newest_first, games_of_player,
    holdings_of, newest_messages, next_deadline_by_game, outbox_posts, players_by_game,
    revealed_seeds,
)
