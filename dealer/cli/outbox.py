"""`dealer outbox`: the queued posts, and re-queueing the parked ones."""

from __future__ import annotations

import click

from dealer.cli.common import _admin, _json


@click.group()
def outbox() -> None:
    """Queued posts: list them, re-queue the ones parked after failing every attempt."""


@outbox.command("list")
@click.option("--failed", is_flag=True, help="Only the parked posts, with their error.")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="At most this many, newest first.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def outbox_list(failed: bool, limit: int, as_json: bool) -> None:
    """List the newest posts and whether each was delivered, waits, is parked or dropped."""
    from dealer.views import list_posts

    rows = _admin(lambda s: list_posts(s, failed=failed, limit=limit))
    if _json(rows, as_json):
        return
    if not rows:
        click.echo("no parked posts" if failed else "no posts queued yet")
        return
    for row in rows:
        where = f"PM to {row['recipient']}" if row["recipient"] else row["channel"]
        status = row["status"] if row["status"] != "failed" else "PARKED"
        click.echo(f"{row['id']}  {status}  {row['created_at']}  {where}  game {row['game'] or '-'}  "
                   f"{row['kind']}  attempts {row['attempts']}")
        click.echo(f"    {row['subject'][:100]}")
        if row["status"] == "pending" and row["next_attempt_at"]:
            click.echo(f"    next attempt at {row['next_attempt_at']}")
        if row["error"] and row["status"] != "delivered":
            click.echo(f"    error: {row['error']}")
    if any(row["status"] == "failed" for row in rows):
        click.echo("A parked post holds back the later posts to the same place. Once the cause is "
                   "fixed: `dealer outbox retry ID` (or `--all`).")


@outbox.command("retry")
@click.argument("ids", nargs=-1, type=int)
@click.option("--all", "retry_all", is_flag=True, help="Every parked post.")
def outbox_retry(ids: tuple[int, ...], retry_all: bool) -> None:
    """Re-queue parked posts (IDS as `dealer outbox list --failed` shows them): the next
    pass sends them, each destination's posts in order."""
    from dealer.shell.delivery import NotParked, retry_posts

    if retry_all == bool(ids):
        raise click.UsageError("name the posts to retry (IDS), or give --all")
    try:
        rows = _admin(lambda s: [(p.id, p.recipient or p.channel, p.last_error)
                                 for p in retry_posts(s, None if retry_all else list(ids))])
    except NotParked as exc:
        raise click.ClickException(str(exc)) from None
    if not rows:
        click.echo("no parked posts to retry")
        return
    for post_id, where, error in rows:
        click.echo(f"post {post_id} to {where} is queued again (it had failed: {error})")
    click.echo("The next pass sends them: `dealer run --once`, or a running `dealer run` within its poll interval.")
