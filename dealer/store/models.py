"""The tables of dealer's store; a test proves the migrations build exactly these."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy import false
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

from dealer.clock import as_utc

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every backend (SQLite stores it naive)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        value = as_utc(value)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        return None if value is None else as_utc(value)


class JsonText:
    """A JSON column's value already written as JSON text (a third of the cost of dumping and
    encoding), stored as it is by :func:`dealer.store.db.json_dumps`. Not a ``str``: another
    engine's ``json.dumps`` refuses it rather than storing a JSON string."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class Base(DeclarativeBase):
    """The declarative base of every table."""

    metadata = MetaData(naming_convention=NAMING)


class Player(Base):
    """A person who plays; ``key`` is the lower-cased name used for look-ups."""

    __tablename__ = "players"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())


class PlayerLookAlike(Base):
    """A look-alike key of a player's name, indexed so that adding a player is one probe; a
    change to the look-alike rule needs a migration."""

    __tablename__ = "player_look_alikes"

    key: Mapped[str] = mapped_column(Text, primary_key=True)
    player: Mapped[str] = mapped_column(String(64), ForeignKey("players.key"), primary_key=True)


class Holding(Base):
    """What an account holds of an item; only the mint may go below zero."""

    __tablename__ = "holdings"
    __table_args__ = (
        CheckConstraint("amount >= 0 OR account = 'mint'", name="not_negative"),
    )

    account: Mapped[str] = mapped_column(String(200), primary_key=True)
    item: Mapped[str] = mapped_column(String(64), primary_key=True)
    amount: Mapped[int] = mapped_column(BigInteger)


class LedgerEntry(Base):
    """One movement of an item between two accounts."""

    __tablename__ = "ledger_entries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UtcDateTime())
    game_id: Mapped[str | None] = mapped_column(String(64), index=True)
    source: Mapped[str] = mapped_column(String(200))
    target: Mapped[str] = mapped_column(String(200))
    item: Mapped[str] = mapped_column(String(64))
    amount: Mapped[int] = mapped_column(BigInteger)
    memo: Mapped[str] = mapped_column(Text, default="")


class Game(Base):
    """One game: its ruleset, settings and current state (JSON)."""

    __tablename__ = "games"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16), index=True)
    channel: Mapped[str] = mapped_column(String(120), index=True)  # routes public posts
    settings: Mapped[dict[str, Any]] = mapped_column(JSON)
    state: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
    next_event_seq: Mapped[int] = mapped_column(Integer, default=1)
    # A child game (a match inside a game) names its parent; its accounts live in the
    # parent's ledger scope and the parent hears when it finishes.
    parent_id: Mapped[str | None] = mapped_column(ForeignKey("games.id"), nullable=True, index=True)


class GameChannel(Base):
    """A channel a game owns: routes the public messages sent there to the game."""

    __tablename__ = "game_channels"

    game_id: Mapped[str] = mapped_column(ForeignKey("games.id"), primary_key=True)
    channel: Mapped[str] = mapped_column(String(120), primary_key=True, index=True)


class GamePlayer(Base):
    """Who takes part in a game (from the ruleset's summary): routes PMs to games."""

    __tablename__ = "game_players"

    game_id: Mapped[str] = mapped_column(ForeignKey("games.id"), primary_key=True)
    player: Mapped[str] = mapped_column(String(64), primary_key=True, index=True)


class Event(Base):
    """The game's history: every rule event, deadline change and admin override."""

    __tablename__ = "events"
    __table_args__ = (UniqueConstraint("game_id", "seq"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    game_id: Mapped[str] = mapped_column(ForeignKey("games.id"))
    seq: Mapped[int] = mapped_column(Integer)
    at: Mapped[datetime] = mapped_column(UtcDateTime())
    type: Mapped[str] = mapped_column(String(64))
    data: Mapped[dict[str, Any]] = mapped_column(JSON)


class Seed(Base):
    """A server seed of a game's epoch (the game, or one Hall phase) (GH-40)."""

    __tablename__ = "seeds"

    game_id: Mapped[str] = mapped_column(ForeignKey("games.id"), primary_key=True)
    epoch: Mapped[int] = mapped_column(Integer, primary_key=True)
    server_seed: Mapped[str] = mapped_column(String(128))
    commitment: Mapped[str] = mapped_column(String(64))
    client_seeds: Mapped[list[str]] = mapped_column(JSON)
    counter: Mapped[int] = mapped_column(Integer, default=0)
    revealed_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)


class Draw(Base):
    """One recorded random draw, recomputable from its epoch's revealed seed."""

    __tablename__ = "draws"

    game_id: Mapped[str] = mapped_column(ForeignKey("games.id"), primary_key=True)
    epoch: Mapped[int] = mapped_column(Integer, primary_key=True)
    counter: Mapped[int] = mapped_column(Integer, primary_key=True)
    n: Mapped[int] = mapped_column(Integer)
    result: Mapped[int] = mapped_column(Integer)
    client: Mapped[str] = mapped_column(String(64))
    purpose: Mapped[str] = mapped_column(String(120))


class Inbound(Base):
    """A message exactly as it arrived, with what became of it."""

    __tablename__ = "inbound"
    __table_args__ = (UniqueConstraint("source", "external_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    source: Mapped[str] = mapped_column(String(64))
    external_id: Mapped[str] = mapped_column(String(200))
    raw: Mapped[str] = mapped_column(Text)
    sender: Mapped[str] = mapped_column(String(200))
    channel: Mapped[str] = mapped_column(String(120))
    game_hint: Mapped[str | None] = mapped_column(String(64), nullable=True)
    kind: Mapped[str] = mapped_column(String(16))
    target: Mapped[str | None] = mapped_column(String(200), nullable=True)
    emoji: Mapped[str | None] = mapped_column(String(64), nullable=True)
    removed: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())  # a reaction taken back
    body: Mapped[str] = mapped_column(Text)
    sent_at: Mapped[datetime] = mapped_column(UtcDateTime())
    received_at: Mapped[datetime] = mapped_column(UtcDateTime())
    status: Mapped[str] = mapped_column(String(16))  # pending|applied|rejected|ignored|failed|quarantined
    outcome: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, nullable=True)
    processed_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    # Why dealer could not handle it (status failed); cleared by `dealer inbox retry`.
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    # The game the message was applied to (set when processed): an edit, deletion or
    # reaction that targets this message goes to that game.
    game_id: Mapped[str | None] = mapped_column(String(64), nullable=True)

    __mapper_args__ = {"eager_defaults": False}


Index("ix_inbound_pending", Inbound.status, Inbound.sent_at)
# A game's messages in a time window (GH-34's tie-break: each candidate's first message of
# the week).
Index("ix_inbound_game", Inbound.game_id, Inbound.sent_at)


class Post(Base):
    """A post queued for delivery (the outbox); ``key`` is its idempotency key."""

    __tablename__ = "outbox"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(200), unique=True)
    game_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    channel: Mapped[str] = mapped_column(String(120))
    recipient: Mapped[str | None] = mapped_column(String(200), nullable=True)
    kind: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    # pending | delivered | failed (parked) | dropped (stale: past its deadline)
    status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    external_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    delivered_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    # Not tried again before this time (backoff after a failure, or the transport's
    # "retry after"); None: as soon as its destination's earlier posts are out.
    next_attempt_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    # Dropped, not sent, once the time passes (a reminder: its deadline).
    stale_after: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    # When its current run of failed attempts began: it is parked only after failing for
    # DEALER_PUBLISH_PARK_AFTER (None: it has not failed since it was last (re)queued).
    failing_since: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    # The name the rules gave the post (a poll: ``poll-3``): a reaction on it reaches the
    # rules with that name.
    ref: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # The players the post means to ping (a turn, a reminder): a platform with mentions
    # lets exactly these (their linked accounts) be notified, nobody else.
    mentions: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)


Index("ix_outbox_pending", Post.status, Post.id)
# A reaction or an edit on one of dealer's own posts finds it by its platform id.
Index("ix_outbox_external_id", Post.external_id)
# Delivery keeps each destination's order: a post waits while an earlier post of its
# destination (channel and recipient) is pending or parked.
Index("ix_outbox_destination", Post.channel, Post.recipient, Post.status, Post.id)


class PostPart(Base):
    """One delivered part of a post split in several messages: a re-send skips the parts
    already out, and a reaction to any part finds its post."""

    __tablename__ = "post_parts"

    post_id: Mapped[int] = mapped_column(ForeignKey("outbox.id"), primary_key=True)
    part: Mapped[int] = mapped_column(Integer, primary_key=True)
    external_id: Mapped[str] = mapped_column(String(200), index=True)
    delivered_at: Mapped[datetime] = mapped_column(UtcDateTime())


class Account(Base):
    """A player's account on a platform: a message is attributed by account, never by display name."""

    __tablename__ = "accounts"

    platform: Mapped[str] = mapped_column(String(32), primary_key=True)
    account_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    player: Mapped[str] = mapped_column(ForeignKey("players.key"), index=True)
    linked_at: Mapped[datetime] = mapped_column(UtcDateTime())


class Passphrase(Base):
    """A player's pass phrase, hashed: an unauthenticated mail carrying it counts for the player."""

    __tablename__ = "passphrases"

    player: Mapped[str] = mapped_column(String(64), ForeignKey("players.key"), primary_key=True)
    hash: Mapped[str] = mapped_column(Text)
    set_at: Mapped[datetime] = mapped_column(UtcDateTime())


class Cursor(Base):
    """How far a platform's history was read in one place, for the catch-up after a reconnect."""

    __tablename__ = "cursors"

    source: Mapped[str] = mapped_column(String(64), primary_key=True)
    place: Mapped[str] = mapped_column(String(200), primary_key=True)
    position: Mapped[str] = mapped_column(String(200))
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class Deadline(Base):
    """A moment a game waits for; APScheduler mirrors the pending rows."""

    __tablename__ = "deadlines"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    game_id: Mapped[str] = mapped_column(ForeignKey("games.id"))
    name: Mapped[str] = mapped_column(String(120))
    due_at: Mapped[datetime] = mapped_column(UtcDateTime())
    set_due_at: Mapped[datetime] = mapped_column(UtcDateTime())  # as the rules set it
    status: Mapped[str] = mapped_column(String(16))  # pending|fired|cancelled
    paused: Mapped[bool] = mapped_column(Boolean, default=False)
    fired_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    # Why its step last crashed; it stays pending, holds its game and is retried every pass.
    error: Mapped[str | None] = mapped_column(Text, nullable=True)


Index("ix_deadlines_due", Deadline.status, Deadline.paused, Deadline.due_at)
# A step reads its game's pending deadlines; without (game_id, status) SQLite may pick the
# status index above and scan every pending deadline of every game.
Index("ix_deadlines_game_pending", Deadline.game_id, Deadline.status)


class Override(Base):
    """An admin override the daemon has seen in its configuration, applied once."""

    __tablename__ = "overrides"

    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    value: Mapped[str] = mapped_column(String(64))
    # Indexed: every step asks whether its game is paused (queries.LOCK_GAME), and the
    # rows are kept for good, one per override ever configured.
    game_id: Mapped[str] = mapped_column(String(64), index=True)
    deadline_name: Mapped[str | None] = mapped_column(String(120), nullable=True)
    seen_at: Mapped[datetime] = mapped_column(UtcDateTime())


class WebhookDelivery(Base):
    """A signed webhook delivery seen within the signature window: the same id again is a replay."""

    __tablename__ = "webhook_deliveries"

    source: Mapped[str] = mapped_column(String(64), primary_key=True)
    delivery_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    received_at: Mapped[datetime] = mapped_column(UtcDateTime(), index=True)
