"""Settings: the environment or ``.env``, prefix ``DEALER_``; ``.env.example`` documents
each one, and where relative paths and the data folder are taken from."""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Annotated, Any, Iterable, Literal, Mapping

from pydantic import BeforeValidator, Field, PrivateAttr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url

ENV_FILE = ".env"
PREFIX = "DEALER_"
PID_FILE = "dealer.pid"

OTHER_NAMES = {
    "DEALER_TEST_DATABASE_URL": "the Postgres database the test suite also runs on",
    "DEALER_TEST_ARTIFACTS": "where the browser tests save their screenshots",
    "DEALER_TEST_REQUIRE_TOOLS": "the tests fail, not skip, when a system tool they drive is missing",
    "DEALER_FAULT": "fault injection for the crash tests",
    "DEALER_BENCH_CALLGRIND_OUT": "where bench/latency.py --instructions has callgrind write",
}
"""``DEALER_*`` variables dealer reads that are not settings of the daemon."""

_SEARCH: Any = object()


def _in_unit(seconds_per_unit: float) -> BeforeValidator:
    """A duration with a unit (``10s``, ``1h30m``), or a bare number in the setting's own
    unit (as older ``.env`` files wrote it)."""

    def read(value: Any) -> Any:
        if isinstance(value, str) and not re.fullmatch(r"\s*\d+(\.\d+)?\s*", value):
            from dealer.clock import parse_duration

            return parse_duration(value, fine=True).total_seconds() / seconds_per_unit
        return value  # a number: pydantic checks it as the float it is

    return BeforeValidator(read)


Seconds = Annotated[float, _in_unit(1)]
Hours = Annotated[float, _in_unit(3600)]


def find_env_file(start: Path | None = None) -> Path | None:
    """The nearest ``.env`` in ``start`` (default the current folder) or a parent folder."""
    folder = (start or Path.cwd()).resolve()
    for candidate in (folder, *folder.parents):
        path = candidate / ENV_FILE
        if path.is_file():
            return path
    return None


class Settings(BaseSettings):
    """Every setting of the daemon; ``_env_file=PATH`` (or ``None``) names the ``.env``.
    The empty defaults are filled in from ``home``."""

    model_config = SettingsConfigDict(
        env_prefix=PREFIX, env_file=None, env_file_encoding="utf-8", extra="ignore"
    )

    home: str = ""
    database_url: str = ""
    inbox: str = ""
    publish: str = ""
    routes: str = ""
    register_unknown: bool = False
    discord_token: str = ""
    discord_webhook_url: str = ""
    discord_api_url: str = "https://discord.com/api/v10"
    discord_gateway_url: str = ""
    discord_rate: float = Field(default=45.0, gt=0)
    deadline_overrides: str = ""
    overrides_file: str = ""
    poll_interval: Seconds = Field(default=5.0, gt=0)
    publish_retries: int = Field(default=5, ge=1)
    publish_park_after: Hours = Field(default=6.0, ge=0)
    publish_backoff: Seconds = Field(default=10.0, gt=0)
    log_format: Literal["text", "json"] = "text"
    metrics_port: int = Field(default=0, ge=0, le=65535)
    web: bool = False
    web_host: str = "127.0.0.1"
    web_port: int = Field(default=8080, ge=1, le=65535)
    max_message_bytes: int = 65536
    timezone: str = ""
    fairness_url: str = ""
    post_detail: Literal["brief", "full"] = "brief"
    web_url: str = ""

    # -- e-mail (dealer-moderator[email]; docs/EMAIL.md) -----------------------------------
    email_from: str = ""
    email_list: str = ""
    email_forwarders: str = ""
    email_auth: Literal["on", "off"] = "on"
    email_authserv_id: str = ""
    email_timezone: str = "UTC"
    imap_user: str = ""
    imap_password: str = ""
    imap_security: Literal["tls", "starttls", "none"] = "tls"
    imap_folder: str = "INBOX"
    smtp_server: str = ""
    smtp_user: str = ""
    smtp_password: str = ""
    smtp_security: Literal["tls", "starttls", "none"] = "starttls"
    # -- Discourse (dealer-moderator[discourse]; docs/DISCOURSE.md) ------------------------
    discourse_url: str = ""
    discourse_api_key: str = ""
    discourse_username: str = ""
    discourse_topics: str = ""
    discourse_webhook_secret: str = ""
    # -- the HTTP endpoint (dealer-moderator[webhook]; docs/WEBHOOKS.md) -------------------
    webhook_listen: str = ""
    webhook_secret: str = ""
    webhook_max_connections: int = Field(default=100, ge=1, le=10000)
    webhook_head_timeout: Seconds = Field(default=10.0, gt=0, le=600)
    webhook_connection_seconds: Seconds = Field(default=60.0, gt=0, le=3600)

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        from dealer.clock import local_zone

        local_zone(value)  # a ValueError naming it when the zone is unknown
        return value.strip()

    @field_validator("fairness_url", "web_url")
    @classmethod
    def _fairness_url(cls, value: str) -> str:
        value = value.strip()
        if value and not _URL.match(value):
            raise ValueError(
                f"{value!r} is not an http:// or https:// address (no spaces, quotes or <>)"
            )
        return value

    _env_path: Path | None = PrivateAttr(default=None)
    _base: Path = PrivateAttr(default_factory=Path.cwd)

    def __init__(self, **values: Any) -> None:
        env_file = values.pop("_env_file", _SEARCH)
        if env_file is _SEARCH:
            env_file = find_env_file()
        env_path = Path(env_file).resolve() if env_file else None
        super().__init__(_env_file=env_path, **values)
        self._env_path = env_path
        self._base = env_path.parent if env_path else Path.cwd().resolve()
        self._resolve()

    def _resolve(self) -> None:
        """Fill in the defaults from ``home`` and anchor relative paths at the base folder."""
        home = self._path(self.home or "var")
        self.home = str(home)
        self.database_url = self._database(self.database_url or f"sqlite:///{home / 'dealer.db'}")
        self.inbox = self._folder_spec(self.inbox, home / "inbox")
        self.publish = self._folder_spec(self.publish, home / "outbox")
        self.overrides_file = str(self._path(self.overrides_file or home / "overrides.env"))

    def _path(self, value: str | Path) -> Path:
        path = Path(value).expanduser()
        return path if path.is_absolute() else self._base / path

    def _folder_spec(self, spec: str, default: Path) -> str:
        kind, sep, arg = (spec or f"dir:{default}").partition(":")
        if kind != "dir":
            return spec
        return f"dir:{self._path(arg) if arg else default}"

    def _database(self, url: str) -> str:
        try:
            parsed = make_url(url)
        except Exception:  # a malformed URL is reported when the store is opened
            return url
        database = parsed.database
        if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
            return url
        if database.startswith("file:") or Path(database).is_absolute():
            return url
        return parsed.set(database=str(self._path(database))).render_as_string(
            hide_password=False
        )

    @property
    def env_file(self) -> Path | None:
        """The ``.env`` file these settings were read from, if any."""
        return self._env_path

    @property
    def base(self) -> Path:
        """The folder relative paths are taken from: the ``.env``'s, or the current one."""
        return self._base

    @property
    def pid_file(self) -> Path:
        """Where ``dealer run`` writes its process id (for ``dealer deadline``)."""
        return Path(self.home) / PID_FILE

    def reread(self) -> "Settings":
        """The settings read again from the environment and the same ``.env`` (SIGHUP)."""
        return Settings(_env_file=self._env_path)


_URL = re.compile(r"^https?://[^\s<>\"'`]+$")


def env_name(field: str) -> str:
    """``database_url`` -> ``DEALER_DATABASE_URL``."""
    return PREFIX + field.upper()


def known_names() -> list[str]:
    """Every ``DEALER_*`` name dealer reads."""
    return sorted([env_name(name) for name in Settings.model_fields] + list(OTHER_NAMES))


def unknown_names(names: Iterable[str]) -> list[tuple[str, str]]:
    """Each ``DEALER_*`` name dealer does not read (without case), with the closest it does."""
    known = known_names()
    found = []
    for name in names:
        upper = name.upper()
        if not upper.startswith(PREFIX) or upper in known:
            continue
        closest = difflib.get_close_matches(upper, known, n=1, cutoff=0.0)
        found.append((name, closest[0] if closest else ""))
    return found


def unknown_settings(environ: Mapping[str, str] | None = None,
                     env_file: Path | None = None) -> list[str]:
    """A warning for each ``DEALER_*`` name that is no setting: a typo is never ignored in silence."""
    from dotenv import dotenv_values

    environ = os.environ if environ is None else environ
    warnings = [
        f"{name} (in the environment) is not a dealer setting; did you mean {closest}?"
        for name, closest in unknown_names(environ)
    ]
    if env_file is not None and env_file.is_file():
        keys = [key for key in dotenv_values(env_file) if key]
        warnings += [
            f"{name} (in {env_file}) is not a dealer setting; did you mean {closest}?"
            for name, closest in unknown_names(keys)
        ]
    return warnings
