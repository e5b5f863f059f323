"""The inbox: `dealer submit` puts a message into it; `dealer inbox` lists the stored
messages and replays the failed ones."""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from dealer.cli.common import _admin, _json, _setting_error, _settings, _time
from dealer.clock import iso_exact, utcnow


@click.command()
@click.option("--from", "sender", required=True, help="The player who sent the message.")
@click.option("--channel", default="pm", show_default=True, help="pm, or a channel such as #the-raceway.")
@click.option("--game", "game_id", help="The game the message is for.")
@click.option("--at", "at_text", metavar="ISO-TIME", help="When the player sent it (default now).")
@click.option("--id", "message_id", help="The message's id (default a fresh one).")
@click.option("--react", "react_to", metavar="TARGET", help="A reaction on message or post TARGET; TEXT is the emoji.")
@click.option("--removed", is_flag=True, help="With --react: the reaction is taken back.")
@click.option("--edit", "edit_of", metavar="TARGET", help="An edit of message TARGET; TEXT is its new text.")
@click.option("--delete", "delete_of", metavar="TARGET", help="The deletion of message TARGET (no TEXT).")
@click.argument("text", nargs=-1)
def submit(sender: str, channel: str, game_id: str | None, at_text: str | None, message_id: str | None,
           react_to: str | None, removed: bool, edit_of: str | None, delete_of: str | None,
           text: tuple[str, ...]) -> None:
    """Drop a message into the inbox (how a human dealer forwards a PM), or a reaction, an
    edit or a deletion (how one forwards a vote on a proposal: ``--react ID 👍``).

    TEXT is the message; quote it, or use \\n-separated lines for several commands.
    """
    from dealer.inbox.base import InboxMessage, Unreadable

    settings = _settings()
    kind, _, path = settings.inbox.partition(":")
    if kind != "dir":
        raise click.ClickException(f"submit writes to a directory inbox; DEALER_INBOX is {settings.inbox!r}")
    sent = _time(at_text, "--at") or utcnow()
    body = " ".join(text).replace("\\n", "\n")
    targets = [(k, t) for k, t in (("reaction", react_to), ("edit", edit_of), ("delete", delete_of)) if t]
    if len(targets) > 1:
        raise click.UsageError("give one of --react, --edit and --delete")
    event_kind, target = targets[0] if targets else ("message", None)
    if removed and event_kind != "reaction":
        raise click.UsageError("--removed goes with --react")
    if event_kind == "delete" and text:
        raise click.UsageError("a deletion has no TEXT")
    if event_kind != "delete" and not body.strip():
        raise click.UsageError("Missing argument 'TEXT'" + (" (the emoji)" if react_to else "."))
    if message_id is not None and not _FILE_SAFE_ID.fullmatch(message_id):
        raise click.BadParameter(
            f"{message_id!r} cannot be part of a file name: use letters, digits and . _ - : @ # + "
            "(at most 200 characters)", param_hint="--id",
        )
    ident = message_id or f"cli-{sent:%Y%m%dT%H%M%S%f}-{uuid.uuid4().hex[:12]}"
    # sent_at keeps its microseconds: two PMs sent within one second keep their order.
    message: dict[str, Any] = {"id": ident, "sender": sender, "channel": channel, "body": body,
                               "sent_at": iso_exact(sent)}
    if game_id:
        message["game"] = game_id
    if event_kind != "message":
        message.update(kind=event_kind, target=target)
        if event_kind == "reaction":
            message.update(emoji=body.strip(), body="")
            if removed:
                message["removed"] = True
    text_out = json.dumps(message, ensure_ascii=False, indent=2) + "\n"
    try:  # what the daemon would refuse is refused here, before a file is written
        InboxMessage.from_json(text_out)
    except Unreadable as exc:
        raise click.ClickException(f"the message would not be read: {exc}") from None
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _setting_error("inbox", f"cannot use {settings.inbox!r}", exc) from None
    # The inbox reads files by modification time, then name: the name is the moment the file
    # was written (to the nanosecond), so two messages forwarded within one tick of the file
    # system's clock are still read, and their exact sent_at ties broken, in the order given.
    # It is written under a hidden name and renamed: the daemon never sees half of it.
    target = folder / f"{_arrival_stamp()}-{ident}.json"
    temporary = folder / f".{target.name}.{os.getpid()}.tmp"
    try:
        temporary.write_text(text_out, encoding="utf-8")
        temporary.replace(target)
    except OSError as exc:
        raise _setting_error("inbox", f"cannot write into {settings.inbox!r}", exc) from None
    finally:
        temporary.unlink(missing_ok=True)
    click.echo(f"queued {target}")


_FILE_SAFE_ID = re.compile(r"[A-Za-z0-9._:@#+-]{1,200}")
"""An id ``dealer submit`` can put in a file name (the inbox itself takes any id)."""


def _arrival_stamp() -> str:
    """``20261201T100000.123456789Z``: the wall-clock time now, to the nanosecond."""
    ns = time.time_ns()
    seconds, fraction = divmod(ns, 1_000_000_000)
    return f"{datetime.fromtimestamp(seconds, timezone.utc):%Y%m%dT%H%M%S}.{fraction:09d}Z"


@click.group()
def inbox() -> None:
    """Stored messages: list them, replay the ones dealer could not handle."""


@inbox.command("list")
@click.option("--failed", is_flag=True, help="Only the messages dealer could not handle, with their error.")
@click.option("--quarantined", is_flag=True, help="Only the mails whose sender was not authenticated, with why.")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="At most this many, newest first.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def inbox_list(failed: bool, quarantined: bool, limit: int, as_json: bool) -> None:
    """List the newest stored messages and what became of them."""
    from dealer.views import list_messages

    if failed and quarantined:
        raise click.UsageError("give --failed or --quarantined, not both")
    rows = _admin(lambda s: list_messages(s, failed=failed, limit=limit, quarantined=quarantined))
    if _json(rows, as_json):
        return
    if not rows:
        click.echo("no failed messages" if failed else "no quarantined messages" if quarantined
                   else "no messages stored yet")
        return
    for row in rows:
        first = (row["body"].strip().splitlines() or [""])[0]
        click.echo(f"{row['id']}  {row['status']}  {row['sent_at']}  from {row['sender']} ({row['channel']})  id {row['message_id']}")
        click.echo(f"    > {first[:100]}")
        if row["error"]:
            click.echo(f"    {'why' if row['status'] == 'quarantined' else 'error'}: {row['error']}")
    if any(row["status"] == "failed" for row in rows):
        click.echo("Once the cause is fixed: `dealer inbox retry ID` (or `--all`), then the next pass applies them.")
    if any(row["status"] == "quarantined" for row in rows):
        click.echo("No reply was sent to these senders. A mail you know is genuine: `dealer inbox release ID`.")


@inbox.command("retry")
@click.argument("ids", nargs=-1)
@click.option("--all", "retry_all", is_flag=True, help="Every failed message.")
def inbox_retry(ids: tuple[str, ...], retry_all: bool) -> None:
    """Put failed messages back to pending: the next pass applies them.

    IDS are the numbers `dealer inbox list` shows (or the messages' own ids). Each is
    applied at its own sent_at, to the game as it stands when the pass runs.
    """
    from dealer.shell.failures import retry_messages

    if retry_all == bool(ids):
        raise click.UsageError("name the messages to retry (IDS), or give --all")
    rows = _admin(lambda s: retry_messages(s, None if retry_all else list(ids)))
    if not rows:
        click.echo("no failed messages to retry")
        return
    for row in rows:
        click.echo(f"message {row['id']} from {row['sender']} is pending again (it had failed: {row['error']})")
    click.echo("The next pass applies them: `dealer run --once`, or a running `dealer run` within its poll interval.")


@inbox.command("release")
@click.argument("ids", nargs=-1, required=True)
def inbox_release(ids: tuple[str, ...]) -> None:
    """Release quarantined mails (IDS as `dealer inbox list --quarantined` shows them): the
    next pass applies each at its own sent time and answers it, as if it had been
    authenticated. Release only a mail you know its sender sent."""
    from dealer.shell.senders import NotReleased, release_messages

    try:
        rows = _admin(lambda s: release_messages(s, list(ids)))
    except NotReleased as exc:
        raise click.ClickException(str(exc)) from None
    for row in rows:
        click.echo(f"message {row['id']} from {row['sender']} (sent {row['sent_at']}) is released: pending")
    click.echo("The next pass applies them: `dealer run --once`, or a running `dealer run` within its poll interval.")
