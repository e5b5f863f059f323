"""The store's pass phrases (hashed) and who a message's sender is, for checking one.

Only a phrase's hash is ever written (:func:`dealer.passphrases.hash_passphrase`).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from dealer.routes import ACCOUNT
from dealer.store.models import Passphrase, Player
from dealer.store.queries import player_of_sender
from dealer.text import player_key


def player_of(connection: Connection | Session, sender: str) -> str | None:
    """The key of the player a message's sender (as stored: ``email:ADDRESS``, a platform
    account, or a forwarded PM's forum name) is, or None for nobody."""
    account = ACCOUNT.match(sender)
    if account:
        platform, account_id = account.group("platform"), account.group("id")
        if platform in ("discourse", "email"):
            account_id = account_id.lower()  # both kept in lower case
        return player_of_sender(connection, platform, account_id)
    key = player_key(sender)
    return connection.execute(select(Player.key).where(Player.key == key)).scalar()


def passphrase_hash(connection: Connection | Session, player: str) -> str | None:
    """The hash of ``player``'s pass phrase (a key), or None when none is set."""
    return connection.execute(select(Passphrase.hash).where(Passphrase.player == player)).scalar()


def set_passphrase_hash(connection: Connection | Session, player: str, hashed: str, now: datetime) -> None:
    """Keep ``hashed`` as ``player``'s pass phrase (a key), replacing any before it."""
    connection.execute(delete(Passphrase).where(Passphrase.player == player))
    connection.execute(insert(Passphrase).values(player=player, hash=hashed, set_at=now))
