"""Settings and commands that say what is wrong: --set, unknown names, bad adapters and
stores, and the one data folder found from any sub-folder."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy.orm import Session

from dealer.cli import main
from dealer.store.db import make_engine
from dealer.store.models import Game

START = "2026-12-01T10:00:00Z"


def roulette(cli, *sets: str, ok: bool = True):  # type: ignore[no-untyped-def]
    cli("player", "add", "alice", "--chips", "100")
    cli("player", "add", "bob", "--chips", "100")
    args = ["game", "new", "roulette", "--id", "r1", "--players", "alice,bob", "--start-in-past", "--start", START]
    for pair in sets:
        args += ["--set", pair]
    return cli(*args, ok=ok)


@pytest.fixture
def offline(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Like ``cli`` for commands that fail or finish before they open the store: run once,
    not on every backend."""
    env = {
        "DEALER_HOME": str(tmp_path),
        "DEALER_DATABASE_URL": f"sqlite:///{tmp_path / 'unused.db'}",
        "DEALER_INBOX": "", "DEALER_PUBLISH": "", "DEALER_DEADLINE_OVERRIDES": "",
    }

    def invoke(*args: str, ok: bool = True):  # type: ignore[no-untyped-def]
        result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
        if ok:
            assert result.exit_code == 0, result.output
        return result

    invoke.env = env  # type: ignore[attr-defined]
    return invoke


# --- --set and --help-settings ------------------------------------------------------------


def test_a_bare_number_for_a_duration_is_refused(cli) -> None:  # type: ignore[no-untyped-def]
    result = roulette(cli, "round_length=2", ok=False)
    assert result.exit_code == 1
    assert "round_length: '2' has no unit: write a duration like 24h, 90m, 1h30m or 2d" in result.output
    assert "there is no game 'r1'" in cli("game", "show", "r1", ok=False).output


def test_durations_with_a_unit_are_taken(cli) -> None:  # type: ignore[no-untyped-def]
    roulette(cli, "round_length=1h30m", "preparation_length=2d")
    settings = json.loads(cli("game", "show", "r1", "--json").output)["settings"]
    assert (settings["round_length"], settings["preparation_length"]) == ("90m", "48h")


def test_an_unknown_setting_names_the_valid_ones(cli) -> None:  # type: ignore[no-untyped-def]
    result = roulette(cli, "foo=1", ok=False)
    assert result.exit_code == 1
    assert ("foo: no such setting; the settings of roulette are rounds, round_length, "
            "preparation_length, layout_public, min_stack, early_close, remind_before, colour_limit") in result.output
    assert "--help-settings" in result.output
    assert "did you mean round_length?" in roulette_again(cli, "round_lenght=2h").output


def roulette_again(cli, pair: str):  # type: ignore[no-untyped-def]
    return cli("game", "new", "roulette", "--id", "r2", "--players", "alice,bob", "--set", pair, ok=False)


def test_a_setting_given_twice_is_refused(cli) -> None:  # type: ignore[no-untyped-def]
    assert "--set rounds is given twice" in roulette(cli, "rounds=3", "rounds=4", ok=False).output


@pytest.mark.parametrize(
    ("kind", "line"),
    [
        ("roulette", ["round_length", "24h", "SR-1", "length of a round"]),
        ("roulette", ["early_close", "false", "I-14"]),
        ("races", ["idle_action_after", "off", "OR-11"]),
        ("races", ["min_horses", "4", "OR-4"]),
        ("hall", ["victory_chips", "25", "GH-8", "chips that win the cycle"]),
    ],
)
def test_help_settings_lists_each_setting_its_default_and_rule(offline, kind, line) -> None:  # type: ignore[no-untyped-def]
    out = offline("game", "new", kind, "--help-settings").output
    from dealer.games import rules_for

    names = [row.split()[0] for row in out.splitlines()[2:] if row.startswith("  ")]
    assert names == list(rules_for(kind).Settings.model_fields)
    row = next(r for r in out.splitlines() if r.split()[:1] == [line[0]])
    assert row.split()[:3] == line[:3]
    assert all(part in row for part in line)


def test_help_settings_needs_no_id_but_creating_does(offline) -> None:  # type: ignore[no-untyped-def]
    assert "Missing option '--id'" in offline("game", "new", "roulette", ok=False).output
    assert "unknown game kind 'poker'" in offline("game", "new", "poker", "--help-settings", ok=False).output


def test_a_game_stored_with_numeric_durations_still_runs(cli, database_url: str) -> None:  # type: ignore[no-untyped-def]
    # An older version stored durations as seconds; this one reads them and plays on.
    roulette(cli, "preparation_length=1h", "round_length=1h", "rounds=1")
    engine = make_engine(database_url)
    with Session(engine) as session, session.begin():
        game = session.get(Game, "r1")
        state = dict(game.state)
        state["settings"] = {**state["settings"], "round_length": 3600, "preparation_length": 3600}
        game.state = state
    engine.dispose()
    cli("run", "--once", "--now", "2026-12-01T11:00:00Z")  # the preparation phase ends
    shown = json.loads(cli("game", "show", "r1", "--json").output)
    assert shown["status"] == "running"
    assert [d["due_at"] for d in shown["deadlines"] if d["name"].startswith("round")] == ["2026-12-01T12:00:00Z"]


# --- unknown names, bad adapters, unreachable stores --------------------------------------


def test_an_unknown_dealer_variable_refuses_to_start(offline, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Issue 34: a misspelt DEALER_DATABSE_URL only warned, and the command ran on the
    default store; now nothing runs until it is corrected."""
    offline.env["DEALER_DATABSE_URL"] = "sqlite:///elsewhere.db"
    line = one_error_line(offline("game", "list", ok=False))
    assert line == (
        "Error: DEALER_DATABSE_URL (in the environment) is not a dealer setting; did you mean "
        "DEALER_DATABASE_URL? dealer does not start with a setting it does not know: correct "
        "or remove it"
    )
    assert not (tmp_path / "unused.db").exists()  # the default store was not touched
    del offline.env["DEALER_DATABSE_URL"]
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("DEALER_PUBLSH=stdout\n", encoding="utf-8")
    line = one_error_line(offline("run", "--once", ok=False))
    assert "DEALER_PUBLSH (in " in line and "did you mean DEALER_PUBLISH?" in line


def test_a_platform_named_as_the_publisher_points_to_routes(offline) -> None:  # type: ignore[no-untyped-def]
    offline.env["DEALER_PUBLISH"] = "discord"
    assert one_error_line(offline("run", "--once", ok=False)) == (
        "Error: DEALER_PUBLISH: Discord is reached through DEALER_ROUTES, not DEALER_PUBLISH: "
        "DEALER_ROUTES='*=discord:channel/CHANNEL_ID;pm=discord:dm' with DEALER_DISCORD_TOKEN "
        "(docs/ROUTES.md, docs/DISCORD.md)"
    )


def test_a_duration_is_refused_with_the_allowed_forms(cli) -> None:  # type: ignore[no-untyped-def]
    result = roulette(cli, "round_length=2M", ok=False)
    assert "round_length: '2M': M could mean minutes or months; write 2m for minutes" in result.output
    assert "is longer than a year: a duration is at most 365d" in roulette_again(cli, "round_length=99999d").output
    cli("game", "new", "roulette", "--id", "r3", "--players", "alice,bob")
    result = cli("deadline", "extend", "r3", "+99999d", ok=False)
    assert "+99999d would be refused: " in result.output
    result = cli("deadline", "extend", "r3", "+2M", ok=False)
    assert "M could mean minutes or months" in result.output


def one_error_line(result) -> str:  # type: ignore[no-untyped-def]
    """The command failed with exactly one line, and no traceback."""
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return lines[0]


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("DEALER_PUBLISH", "ftp://example.org/posts", "Error: DEALER_PUBLISH: unknown publisher 'ftp://example.org/posts'"),
        ("DEALER_INBOX", "pop3:mail.example.org", "Error: DEALER_INBOX: unknown inbox 'pop3:mail.example.org'"),
        ("DEALER_INBOX", "imap:mail.example.org", "Error: DEALER_INBOX: an IMAP inbox needs DEALER_IMAP_USER"),
        ("DEALER_PUBLISH", "email", "Error: DEALER_PUBLISH: mailing posts needs DEALER_SMTP_SERVER"),
        ("DEALER_INBOX", "dir:/dev/null/inbox", "Error: DEALER_INBOX: cannot use 'dir:/dev/null/inbox': Not a directory"),
        ("DEALER_PUBLISH", "dir:/dev/null/outbox", "Error: DEALER_PUBLISH: cannot use 'dir:/dev/null/outbox': Not a directory"),
    ],
)
def test_a_bad_inbox_or_publisher_ends_run_with_one_line(offline, name, value, expected) -> None:  # type: ignore[no-untyped-def]
    offline.env[name] = value
    assert one_error_line(offline("run", "--once", ok=False)).startswith(expected)


def test_submit_names_a_bad_inbox(offline) -> None:  # type: ignore[no-untyped-def]
    offline.env["DEALER_INBOX"] = "dir:/dev/null/inbox"
    line = one_error_line(offline("submit", "--from", "alice", "hi", ok=False))
    assert line.startswith("Error: DEALER_INBOX: cannot use 'dir:/dev/null/inbox'")


UNREACHABLE = "postgresql://dealer:secret@127.0.0.1:1/dealer"


@pytest.mark.parametrize(
    ("command", "url", "expected"),
    [
        (("game", "list"), UNREACHABLE,
         "Error: DEALER_DATABASE_URL: cannot reach postgresql://dealer:***@127.0.0.1:1/dealer: connection failed"),
        (("migrate",), UNREACHABLE, "Error: DEALER_DATABASE_URL: cannot reach postgresql://dealer:***@"),
        (("run", "--once"), UNREACHABLE, "Error: DEALER_DATABASE_URL: cannot reach postgresql://dealer:***@"),
        (("player", "add", "zed"), UNREACHABLE, "Error: DEALER_DATABASE_URL: cannot reach postgresql://dealer:***@"),
        (("game", "list"), "sqlite:////dev/null/dealer.db",
         "Error: DEALER_DATABASE_URL: cannot reach sqlite:////dev/null/dealer.db: File exists (/dev/null)"),
        (("migrate",), "not a url", "Error: DEALER_DATABASE_URL: not a database URL dealer can use: "),
        (("run", "--once"), "mysql+nodriver://x/y", "Error: DEALER_DATABASE_URL: not a database URL dealer can use: "),
    ],
)
def test_a_store_that_cannot_be_reached_ends_with_one_line(offline, command, url, expected) -> None:  # type: ignore[no-untyped-def]
    offline.env["DEALER_DATABASE_URL"] = url
    line = one_error_line(offline(*command, ok=False))
    assert line.startswith(expected)
    assert "secret" not in line


def test_the_daemon_started_before_its_database_server_waits_for_it(offline, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    """`dealer run` (not --once) on a Postgres server that is down waits with backoff,
    logging each attempt, instead of ending; a stop during the wait ends it cleanly."""
    from dealer.shell.passes import Dealer

    waits: list[float] = []

    def sleep(self: Dealer, seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 4:
            self.stopping = True  # what SIGTERM does

    monkeypatch.setattr(Dealer, "_sleep", sleep)
    offline.env["DEALER_DATABASE_URL"] = UNREACHABLE
    with caplog.at_level(logging.INFO, logger="dealer"):
        result = offline("run")
    assert result.exit_code == 0
    assert waits == [1.0, 2.0, 4.0, 8.0]
    attempts = [r.getMessage() for r in caplog.records if "database unreachable" in r.getMessage()]
    assert len(attempts) == 4 and "attempt 4 failed, next in 8 s" in attempts[3]
    assert "secret" not in " ".join(attempts)
    assert "dealer stopped before the store could be reached" in caplog.text


def test_the_daemon_on_an_unusable_sqlite_file_still_ends_at_once(offline) -> None:  # type: ignore[no-untyped-def]
    offline.env["DEALER_DATABASE_URL"] = "sqlite:////dev/null/dealer.db"
    line = one_error_line(offline("run", ok=False))
    assert line.startswith("Error: DEALER_DATABASE_URL: cannot reach sqlite:////dev/null/dealer.db")


def test_a_malformed_setting_is_named(offline) -> None:  # type: ignore[no-untyped-def]
    offline.env["DEALER_POLL_INTERVAL"] = "often"
    assert one_error_line(offline("game", "list", ok=False)).startswith("Error: DEALER_POLL_INTERVAL: ")


# --- one data folder, found from any sub-folder --------------------------------------------


@pytest.fixture
def bare_runner(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """A CliRunner with no DEALER_* variable at all: only .env and the defaults speak."""
    for name in list(os.environ):
        if name.upper().startswith("DEALER_"):
            monkeypatch.delenv(name)

    def invoke(*args: str):  # type: ignore[no-untyped-def]
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result

    return invoke


def test_commands_from_a_sub_folder_use_the_projects_data_folder(tmp_path: Path, monkeypatch, bare_runner) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "project"
    sub = root / "notes" / "2026"
    sub.mkdir(parents=True)
    (root / ".env").write_text("DEALER_POLL_INTERVAL=5\n", encoding="utf-8")
    monkeypatch.chdir(sub)
    help_text = bare_runner("--help").output
    assert f"Data folder (DEALER_HOME): {root / 'var'}\nSettings file (.env): {root / '.env'}\n" in help_text
    bare_runner("migrate")
    bare_runner("player", "add", "alice")
    bare_runner("submit", "--from", "alice", "hello")
    assert (root / "var" / "dealer.db").is_file()
    assert len(list((root / "var" / "inbox").glob("*.json"))) == 1
    assert not (sub / "var").exists()
    monkeypatch.chdir(root)  # from the project folder itself: the same store
    assert "alice: 0 chips" in bare_runner("player", "show", "alice").output


def test_dealer_home_moves_everything(tmp_path: Path, monkeypatch, bare_runner) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / ".env").write_text("DEALER_HOME=state\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    bare_runner("migrate")
    bare_runner("run", "--once")
    assert (tmp_path / "state" / "dealer.db").is_file()
    assert (tmp_path / "state" / "inbox").is_dir() and (tmp_path / "state" / "outbox").is_dir()
    assert f"Data folder (DEALER_HOME): {tmp_path / 'state'}\n" in bare_runner("--help").output


def test_without_an_env_file_the_data_folder_is_in_the_current_folder(tmp_path: Path, monkeypatch, bare_runner) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    out = bare_runner("--help").output
    assert f"Data folder (DEALER_HOME): {tmp_path / 'var'}\nSettings file (.env): none found in {tmp_path} or above" in out
