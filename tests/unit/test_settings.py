"""Settings: the .env found upward, the data folder, relative paths, unknown names."""

from __future__ import annotations

from pathlib import Path

import pytest

from dealer.settings import OTHER_NAMES, Settings, find_env_file, known_names, unknown_names, unknown_settings


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No DEALER_* variable of the machine running the tests leaks in."""
    import os

    for name in list(os.environ):
        if name.upper().startswith("DEALER_"):
            monkeypatch.delenv(name)


def project(tmp_path: Path, env: str = "") -> Path:
    """A project folder with a .env and a nested sub-folder; return the sub-folder."""
    root = tmp_path / "project"
    (root / "docs" / "deep").mkdir(parents=True)
    (root / ".env").write_text(env, encoding="utf-8")
    return root / "docs" / "deep"


def test_the_env_file_is_found_upward(tmp_path: Path) -> None:
    sub = project(tmp_path)
    assert find_env_file(sub) == tmp_path / "project" / ".env"
    assert find_env_file(tmp_path / "project") == tmp_path / "project" / ".env"


def test_defaults_live_in_var_beside_the_env_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project(tmp_path))
    settings = Settings()
    home = tmp_path / "project" / "var"
    assert settings.env_file == tmp_path / "project" / ".env"
    assert settings.home == str(home)
    assert settings.database_url == f"sqlite:///{home / 'dealer.db'}"
    assert settings.inbox == f"dir:{home / 'inbox'}"
    assert settings.publish == f"dir:{home / 'outbox'}"
    assert settings.overrides_file == str(home / "overrides.env")
    assert settings.pid_file == home / "dealer.pid"


def test_without_an_env_file_the_current_folder_is_the_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings(_env_file=None)
    assert settings.env_file is None
    assert settings.home == str(tmp_path.resolve() / "var")


def test_relative_paths_in_settings_are_taken_from_the_env_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sub = project(tmp_path, "DEALER_HOME=data\nDEALER_DATABASE_URL=sqlite:///./db/x.db\n"
                            "DEALER_PUBLISH=dir:posts\nDEALER_OVERRIDES_FILE=conf/o.env\n")
    monkeypatch.chdir(sub)
    settings = Settings()
    root = tmp_path / "project"
    assert settings.home == str(root / "data")
    assert settings.database_url == f"sqlite:///{root / 'db' / 'x.db'}"
    assert settings.inbox == f"dir:{root / 'data' / 'inbox'}"  # derived from the home
    assert settings.publish == f"dir:{root / 'posts'}"
    assert settings.overrides_file == str(root / "conf" / "o.env")


def test_absolute_paths_and_other_stores_are_kept(tmp_path: Path) -> None:
    settings = Settings(
        _env_file=None, home=str(tmp_path / "h"), database_url="postgresql://u:p@db:5432/dealer",
        inbox="memory", publish="stdout",
    )
    assert settings.database_url == "postgresql://u:p@db:5432/dealer"
    assert (settings.inbox, settings.publish) == ("memory", "stdout")
    assert Settings(_env_file=None, database_url="sqlite:////srv/d.db").database_url == "sqlite:////srv/d.db"
    assert Settings(_env_file=None, database_url="sqlite://").database_url == "sqlite://"


def test_the_environment_wins_over_the_env_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project(tmp_path, "DEALER_POLL_INTERVAL=9\n"))
    monkeypatch.setenv("DEALER_POLL_INTERVAL", "2")
    assert Settings().poll_interval == 2


def test_every_setting_has_a_name_and_a_line_in_env_example() -> None:
    example = (Path(__file__).parents[2] / ".env.example").read_text(encoding="utf-8")
    for name in known_names():
        if name in OTHER_NAMES:
            continue
        assert f"{name}=" in example, f"{name} is missing from .env.example"


def test_unknown_names_get_the_closest_valid_one() -> None:
    found = unknown_names(["DEALER_DATABSE_URL", "DEALER_INBOX", "PATH", "dealer_publsh", "DEALER_OVERIDES"])
    assert found == [
        ("DEALER_DATABSE_URL", "DEALER_DATABASE_URL"),
        ("dealer_publsh", "DEALER_PUBLISH"),
        ("DEALER_OVERIDES", "DEALER_OVERRIDES_FILE"),
    ]
    assert unknown_names(["DEALER_TEST_DATABASE_URL", "DEALER_FAULT", "dealer_home"]) == []


def test_unknown_names_in_the_environment_and_the_env_file_are_reported(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("# a comment\nDEALER_INBOX=dir:x\nDEALER_PUBLSH=stdout\nOTHER_TOOL=1\n", encoding="utf-8")
    warnings = unknown_settings({"DEALER_DATABSE_URL": "x", "HOME": "/root"}, env_file)
    assert warnings == [
        "DEALER_DATABSE_URL (in the environment) is not a dealer setting; did you mean DEALER_DATABASE_URL?",
        f"DEALER_PUBLSH (in {env_file}) is not a dealer setting; did you mean DEALER_PUBLISH?",
    ]


# --- durations: a unit everywhere, a bare number in the setting's own unit (issue 34, item 6)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [("POLL_INTERVAL", "5", 5.0), ("POLL_INTERVAL", "0.2", 0.2), ("POLL_INTERVAL", "250ms", 0.25),
     ("POLL_INTERVAL", "1m", 60.0), ("PUBLISH_BACKOFF", "1.5s", 1.5), ("PUBLISH_BACKOFF", "2m", 120.0),
     ("PUBLISH_PARK_AFTER", "6", 6.0), ("PUBLISH_PARK_AFTER", "90m", 1.5), ("PUBLISH_PARK_AFTER", "1d", 24.0),
     ("WEBHOOK_HEAD_TIMEOUT", "500ms", 0.5), ("WEBHOOK_CONNECTION_SECONDS", "1m30s", 90.0)],
)
def test_duration_settings_take_a_unit(
    monkeypatch: pytest.MonkeyPatch, name: str, text: str, expected: float
) -> None:
    monkeypatch.setenv(f"DEALER_{name}", text)
    assert getattr(Settings(_env_file=None), name.lower()) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "says"),
    [("2M", "M could mean minutes or months; write 2m for minutes"),
     ("often", "not a duration: 'often' (write it like 10s, 500ms, 1.5s, 90m or 6h"),
     ("0ms", "greater than 0"), ("400d", "longer than a year")],
)
def test_a_wrong_duration_setting_says_how_to_write_one(
    monkeypatch: pytest.MonkeyPatch, text: str, says: str
) -> None:
    monkeypatch.setenv("DEALER_POLL_INTERVAL", text)
    with pytest.raises(ValueError) as raised:
        Settings(_env_file=None)
    assert says in str(raised.value)
