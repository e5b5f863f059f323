"""The outbox: posts queued, claimed across destinations, marked sent, failed, dropped or
parked, and the parts of a post split for its platform."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Sequence

from sqlalchemy import (
    String, any_, bindparam, case, exists, func, or_, select, union, union_all, update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session
from sqlalchemy.types import Integer

from dealer.store.direct import Direct
from dealer.store.models import Account, Post, PostPart
from dealer.store.queries.platforms import accounts_of, by_player
from dealer.store.queries.sql import in_array, json_rows, row_type
from dealer.text import player_key

_posts = Post.__table__
_accounts = Account.__table__
_parts = PostPart.__table__


# -- the outbox ----------------------------------------------------------------------------

INSERT_POSTS = _posts.insert().inline()

DELIVERED = (
    update(_posts)
    .where(_posts.c.id == bindparam("post_id"), _posts.c.status == "pending")
    .values(
        status="delivered",
        attempts=_posts.c.attempts + 1,
        external_id=bindparam("new_external_id"),
        delivered_at=bindparam("new_delivered_at"),
        next_attempt_at=None,
    )
)
"""Mark a post sent only if it is still pending: a post is delivered once, whoever sent it."""

POST_NOT_DELIVERED = (
    update(_posts)
    .where(_posts.c.id == bindparam("post_id"), _posts.c.status == "pending")
    .values(attempts=bindparam("new_attempts"), last_error=bindparam("new_error"),
            status=bindparam("new_status"), next_attempt_at=bindparam("new_next_attempt_at"),
            failing_since=func.coalesce(_posts.c.failing_since, bindparam("new_failing_since")))
)
"""Count a failed attempt at a pending post (``new_failing_since`` at its first failure)."""

UNPARK_DUE = (
    update(_posts)
    .where(_posts.c.status == "failed",
           or_(_posts.c.next_attempt_at.is_(None), _posts.c.next_attempt_at <= bindparam("now")))
    .values(status="pending")
)
"""Put the parked posts due again back in the queue, their attempts and ``failing_since`` kept."""

POST_DROPPED = (
    update(_posts)
    .where(_posts.c.id == bindparam("post_id"), _posts.c.status == "pending")
    .values(status="dropped", last_error=bindparam("new_error"), next_attempt_at=None)
)
"""Drop a stale pending post unsent (``post_id``, ``new_error``)."""

_PARKED = (
    select(_posts.c.channel, _posts.c.recipient).where(_posts.c.status == "failed").distinct()
    .cte("parked").prefix_with("MATERIALIZED", dialect="postgresql")
)
_WINDOW_ROWS = (
    select(_posts)
    .where(_posts.c.status == "pending", _posts.c.id > bindparam("after"),
           # No post of a destination with a parked post: the parked posts are read once
           # (a few at most: index ix_outbox_pending), not probed per pending post.
           ~exists().where(_PARKED.c.channel == _posts.c.channel,
                           _PARKED.c.recipient.is_not_distinct_from(_posts.c.recipient)))
    .order_by(_posts.c.id)
    .limit(bindparam("n"))
)
_WINDOW = _WINDOW_ROWS.with_only_columns(
    _posts.c.id, _posts.c.channel, _posts.c.recipient, _posts.c.next_attempt_at, _posts.c.mentions
)
_LOCK_POSTS = (
    select(
        _posts,
        # The accounts of the batch's players (keys), read with the claim's first post:
        # once for the batch, not once per post.
        case((_posts.c.id == bindparam("first"), select(
            json_rows(_accounts.c.player, _accounts.c.platform, _accounts.c.account_id)
        ).where(_accounts.c.player == any_(bindparam("players", type_=ARRAY(String)))).scalar_subquery()))
        .label("accounts"),
    )
    .where(_posts.c.id == any_(bindparam("ids", type_=ARRAY(Integer))), _posts.c.status == "pending")
    .order_by(_posts.c.id)
    # A post another daemon holds is skipped, not waited for: its destination is then
    # left out of this claim (see claim_posts).
    .with_for_update(skip_locked=True, of=_posts)
)
"""Postgres: the chosen posts still pending, locked; the ``first`` carries the ``players``' accounts."""


_FIRST_PAGE = _WINDOW.cte("page").prefix_with("MATERIALIZED")
_FIRST_TAKEN = (
    # The posts the claim may take: the page's first ``limit`` (not the one more that says
    # whether another claim would find any), none waiting for its backoff.
    select(_FIRST_PAGE.c.id).where(or_(_FIRST_PAGE.c.next_attempt_at.is_(None),
                                       _FIRST_PAGE.c.next_attempt_at <= bindparam("now")))
    .order_by(_FIRST_PAGE.c.id).limit(bindparam("limit"))
    .subquery("taken")
)
_FIRST_LOCKED = (
    select(_posts)
    .where(in_array(_posts.c.id, _FIRST_TAKEN.c.id), _posts.c.status == "pending")
    .order_by(_posts.c.id)
    .with_for_update(skip_locked=True, of=_posts)
    .cte("locked").prefix_with("MATERIALIZED")
)
_FIRST_NAMES = union_all(
    select(_FIRST_PAGE.c.recipient.label("name")),
    select(func.json_array_elements_text(case(
        (func.json_typeof(_FIRST_PAGE.c.mentions) == "array", _FIRST_PAGE.c.mentions)))),
).subquery("names")
"""The names the first page's posts are addressed to or mention, as written."""
_FIRST_KEYS = union(select(_FIRST_NAMES.c.name), select(func.lower(_FIRST_NAMES.c.name))).subquery("keys")
"""Those names as written and in lower case, looked up as one array (:func:`~dealer.store.queries.sql.in_array`)."""
_FIRST_PAGE_LOCKED = (
    select(
        *_FIRST_PAGE.c,
        *[column.label("locked_" + column.key) for column in _FIRST_LOCKED.c],
        # The accounts of the players the page's posts are addressed to or mention, by
        # each name as written and in lower case (a player's key, for most names: see
        # _FirstPage.looked_up), on its first row.
        case((_FIRST_PAGE.c.id == select(func.min(_FIRST_PAGE.c.id)).scalar_subquery(), select(
            json_rows(_accounts.c.player, _accounts.c.platform, _accounts.c.account_id)
        ).where(in_array(_accounts.c.player, _FIRST_KEYS.c.name))
        .scalar_subquery())).label("accounts"),
    )
    .select_from(_FIRST_PAGE.outerjoin(_FIRST_LOCKED, _FIRST_LOCKED.c.id == _FIRST_PAGE.c.id))
    .order_by(_FIRST_PAGE.c.id)
)
"""Postgres: a claim's first page, the posts the claim may take locked in the same statement
(if no other daemon holds them) and its players' accounts: one round trip. The page is
read without a lock, so a post another daemon holds still holds its destination back."""

FIRST_PAGE_LOCKED = Direct(_FIRST_PAGE_LOCKED)
""":data:`_FIRST_PAGE_LOCKED`, run on the driver's cursor (:mod:`dealer.store.direct`)."""

PagePost = row_type("PagePost", _WINDOW_ROWS)
"""A pending post of a page (SQLite: the posts :func:`claim_posts` takes)."""
_PagePostShort = row_type("PagePostShort", _WINDOW)
"""Postgres: a pending post of a page, the columns the choice reads (:data:`_WINDOW`)."""
LockedPost = row_type("LockedPost", _LOCK_POSTS)
"""A post :func:`claim_posts` took on Postgres (:data:`_LOCK_POSTS`)."""

CLAIM_WINDOW = 200
"""Pending posts read per page after the first, while looking for posts to claim."""


@dataclass
class Claim:
    """What :func:`claim_posts` took: the posts, locked, in publication order, whether they
    were all then sendable (``complete``), and their players' accounts."""

    posts: list[PagePost] | list[LockedPost]
    complete: bool
    accounts: dict[str, dict[str, str]] = field(default_factory=dict)


def claim_posts(connection: Connection, now: datetime, limit: int) -> Claim:
    """Up to ``limit`` posts to send in one transaction, in publication order, across
    destinations (a channel and a PM's recipient), with their players' accounts.

    The pending posts are read a page at a time; each destination gives its posts from its
    first pending one on, until one waits for its backoff; a parked post holds its
    destination. On Postgres the posts are locked (``SKIP LOCKED``) as the page is read: one
    held elsewhere ends its destination's share, so no post overtakes an earlier one. The
    first page holds ``limit`` + 1 posts, enough when no destination waits. Pages of plain
    rows replace a per-post "no earlier post pending" probe.
    """
    sqlite = connection.dialect.name == "sqlite"
    blocked: set[tuple[str, str | None]] = set()
    chosen: dict[tuple[str, str | None], list[Any]] = {}
    window, page_row = (_WINDOW_ROWS, PagePost._make) if sqlite else (_WINDOW, _PagePostShort._make)
    count, after, complete = 0, 0, True
    size = limit + 1
    first: _FirstPage | None = None  # Postgres: the first page, read and locked at once
    while count < limit:
        if first is None and not sqlite:
            first = _FirstPage.read(connection, now, limit, size)
            page: Sequence[Any] = first.page
        else:
            page = connection.execute(window, {"after": after, "n": size}).all()
        for row in map(page_row, page):  # only the rows looked at (a claim may stop early)
            where = (row.channel, row.recipient)
            if where in blocked:
                continue
            if row.next_attempt_at is not None and row.next_attempt_at > now:
                blocked.add(where)  # waits for its backoff; the rest of its destination too
                continue
            if count == limit:
                complete = False  # sendable, left for the next claim
                break
            chosen.setdefault(where, []).append(row)
            count += 1
        if len(page) < size or not complete:
            break
        after, size = page[-1].id, CLAIM_WINDOW
        if count == limit:
            complete = False  # the limit fell at the end of a full page: more may follow
    if not chosen:
        return Claim([], complete)
    posts = sorted((row for rows in chosen.values() for row in rows), key=lambda row: row.id)
    players = sorted({player_key(name) for row in posts
                      for name in (*(row.mentions or ()), row.recipient) if name})
    if sqlite:
        # The pages' rows are the posts as they are (the write lock is this transaction's).
        return Claim(posts, complete, accounts_of(connection, players))
    assert first is not None
    locked = dict(first.locked)  # the first page's posts it could take, locked with it
    accounts = first.accounts
    covered = {key for key in players if key in first.looked_up}
    later = [row.id for row in posts if row.id not in first.taken]  # from the pages after it
    if later:
        locked.update((row.id, row) for row in map(LockedPost._make, connection.execute(_LOCK_POSTS, {
            "ids": later, "first": later[0], "players": [key for key in players if key not in covered]})))
        if later[0] in locked:
            accounts = {**accounts, **by_player(locked[later[0]].accounts or ())}
            covered = set(players)
    claimed = []
    for rows in chosen.values():
        for row in rows:
            if row.id not in locked:
                complete = False  # another daemon's (or gone): this destination stops here
                break
            claimed.append(locked[row.id])
    claimed.sort(key=lambda row: row.id)
    if claimed and len(covered) < len(players):
        accounts = {**accounts, **accounts_of(connection, [key for key in players if key not in covered])}
    return Claim(claimed, complete, {key: accounts[key] for key in players if key in accounts})


@dataclass
class _FirstPage:
    """Postgres: a claim's first page, its posts locked with it (:data:`_FIRST_PAGE_LOCKED`)."""

    page: list[Any]
    """The page's rows (:data:`_PagePostShort`)."""
    taken: set[int]
    """The ids of the posts the statement tried to lock (whether it did or not)."""
    locked: dict[int, Any]
    """The posts it locked, by id (:data:`LockedPost` rows)."""
    accounts: dict[str, dict[str, str]]
    """The accounts it read, by player key (:func:`~dealer.store.queries.platforms.by_player`)."""
    looked_up: set[str]
    """The player keys whose accounts it read: each name as written, and lower-cased if ASCII;
    a key not among them is read apart."""

    @classmethod
    def read(cls, connection: Connection, now: datetime, limit: int, size: int) -> _FirstPage:
        rows = FIRST_PAGE_LOCKED.rows(connection, {"after": 0, "n": size, "limit": limit, "now": now})
        width = len(_WINDOW.selected_columns)
        page = [_PagePostShort._make(row[:width]) for row in rows]
        locked = {row[width]: LockedPost._make(row[width:]) for row in rows if row[width] is not None}
        # What the statement tried to lock, as it chose: the first `limit` not waiting.
        taken = set(sorted(row.id for row in page
                           if row.next_attempt_at is None or row.next_attempt_at <= now)[:limit])
        names = {name for row in page for name in (row.recipient, *(row.mentions or ())) if name is not None}
        looked_up = names | {name.lower() for name in names if name.isascii()}
        accounts = rows[0][-1] if rows else None  # the last column, on the first row
        return cls(page, taken, locked, by_player(accounts or ()), looked_up)


def count_parked(connection: Connection | Session) -> int:
    """How many posts are parked (``failed``), waiting for ``dealer outbox retry``."""
    return connection.execute(select(func.count()).select_from(_posts).where(_posts.c.status == "failed")).scalar_one()


def parked_posts(session: Session, ids: list[int] | None) -> list[Post]:
    """Parked posts, locked: those of ``ids`` (every one with None), in publication order."""
    query = select(Post).where(Post.status == "failed").order_by(Post.id).with_for_update()
    if ids is not None:
        query = query.where(Post.id.in_(ids))
    return list(session.scalars(query))


def post_exists(session: Session, key: str) -> bool:
    """Whether a post with idempotency ``key`` is queued or sent."""
    return session.scalar(select(Post.id).where(Post.key == key)) is not None


_PARTS_OF_POST = select(_parts.c.part, _parts.c.external_id).where(_parts.c.post_id == bindparam("post_id"))


def parts_sent(connection: Connection, post_id: int) -> dict[int, str]:
    """The parts of a post already delivered, by index, with their platform ids."""
    return {row.part: row.external_id for row in connection.execute(_PARTS_OF_POST, {"post_id": post_id})}


def record_part(connection: Connection, post_id: int, part: int, external_id: str, now: datetime) -> None:
    """Record one delivered part of a post (in the claim's transaction)."""
    connection.execute(_parts.insert().values(post_id=post_id, part=part, external_id=external_id, delivered_at=now))
