"""Settings: the environment or ``.env``, prefix ``DEALER_`` (DESIGN.md, "Settings").

Where things are: the ``.env`` file is the nearest one in the current folder or a parent
folder (so a command run from a sub-folder of the project reads the project's ``.env``).
The *base folder* is the folder of that ``.env``, or the current folder when there is none.
``DEALER_HOME``, the data folder, defaults to ``var`` in the base folder; the store, the
inbox, the outbox, the overrides file and the daemon's pid file default to places inside
it. A relative path in any setting is taken relative to the base folder, not to wherever
the command happens to run, so no command ever creates a second ``./var/``.
"""

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
    """A duration setting: written with a unit (``10s``, ``250ms``, ``6h``, ``1h30m``: see
    :func:`dealer.clock.parse_duration`) or as a bare number in the setting's own unit (the
    one its description names, kept for the files that already say ``5``)."""

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
    """Every setting of the daemon; ``.env.example`` documents each one.

    ``Settings()`` finds ``.env`` upward from the current folder; ``_env_file=PATH`` (or
    ``None``) names it instead. The empty defaults below are filled in from ``home``.
    """

    model_config = SettingsConfigDict(
        env_prefix=PREFIX, env_file=None, env_file_encoding="utf-8", extra="ignore"
    )

    home: str = Field(
        default="",
        description="The data folder; default ./var beside .env (or the current folder).",
    )
    database_url: str = Field(
        default="",
        description=(
            "SQLAlchemy URL of the store (default sqlite:///HOME/dealer.db); "
            "postgresql+psycopg://... in production."
        ),
    )
    inbox: str = Field(
        default="", description="Where messages come from: dir:PATH (default dir:HOME/inbox)."
    )
    publish: str = Field(
        default="",
        description="Where posts go: dir:PATH (default dir:HOME/outbox), stdout, email[:LIST_ADDRESS] or discourse.",
    )
    routes: str = Field(
        default="",
        description=(
            "Which transport serves which game channel: CHANNEL=DESTINATION separated by ';', "
            "e.g. '#the-raceway=discord:channel/123;pm=discord:dm'; '*' is the default "
            "(else PUBLISH). `dealer routes` prints and checks the table (docs/ROUTES.md)."
        ),
    )
    register_unknown: bool = Field(
        default=False,
        description=(
            "A sender on a platform (Discord) who is no player and sends a game's join command "
            "(join, sit) becomes a player under their display name, linked to that account. "
            "Off: they get one reply saying how to be added."
        ),
    )
    discord_token: str = Field(
        default="", description="The Discord bot's token (needs dealer-moderator[discord]; docs/DISCORD.md)."
    )
    discord_webhook_url: str = Field(
        default="",
        description="A Discord webhook URL for the discord:webhook route (public posts only, no bot needed).",
    )
    discord_api_url: str = Field(
        default="https://discord.com/api/v10",
        description="Discord's REST API base (change only for a proxy or the test fake).",
    )
    discord_gateway_url: str = Field(
        default="",
        description="Discord's gateway address (empty: Discord's own; for a proxy or the test fake).",
    )
    discord_rate: float = Field(
        default=45.0, gt=0,
        description=(
            "Requests per second dealer allows itself on Discord's REST API (a token bucket, "
            "below Discord's global 50/s); Discord's own rate-limit headers and 429s are honoured too."
        ),
    )
    deadline_overrides: str = Field(
        default="",
        description=(
            "Admin deadline overrides: JSON object or 'KEY=VALUE;KEY=VALUE', keys GAME or "
            "GAME:DEADLINE, values an ISO UTC time, +12h / -30m, pause or now."
        ),
    )
    overrides_file: str = Field(
        default="",
        description=(
            "A file of admin deadline overrides, same syntax, written by `dealer deadline` "
            "(default HOME/overrides.env); it wins over DEADLINE_OVERRIDES for the same key."
        ),
    )
    poll_interval: Seconds = Field(
        default=5.0, gt=0,
        description="Time between inbox scans while the daemon runs: 5s, 500ms, 1m (a bare number is seconds).",
    )
    publish_retries: int = Field(
        default=5, ge=1,
        description="Delivery attempts of a post before it may be parked (see PUBLISH_PARK_AFTER; `dealer outbox retry` re-queues it).",
    )
    publish_park_after: Hours = Field(
        default=6.0, ge=0,
        description=(
            "How long a post must keep failing (and at least PUBLISH_RETRIES attempts) before it is "
            "parked and dealer health says so; a parked post is still retried after its backoff. "
            "6h, 90m, 1d (a bare number is hours)."
        ),
    )
    publish_backoff: Seconds = Field(
        default=10.0, gt=0,
        description=(
            "Wait before a post that failed is tried again (10s, 500ms; a bare number is seconds); "
            "doubled after each failure (at most an hour), with jitter. A transport's own "
            "\"retry after\" is honoured."
        ),
    )
    log_format: Literal["text", "json"] = Field(
        default="text",
        description="Log lines as text, or one JSON object per line (with game, message, deadline and post ids).",
    )
    metrics_port: int = Field(
        default=0, ge=0, le=65535,
        description="Serve Prometheus metrics on this port while `dealer run` runs (0: off; needs dealer-moderator[metrics]).",
    )
    web: bool = Field(
        default=False,
        description="Also serve the read-only status page while `dealer run` runs (needs dealer-moderator[web]).",
    )
    web_host: str = Field(
        default="127.0.0.1", description="The address `dealer serve` (and `dealer run` with DEALER_WEB) binds."
    )
    web_port: int = Field(
        default=8080, ge=1, le=65535, description="The port of the status page."
    )
    max_message_bytes: int = Field(
        default=65536, description="Inbox files larger than this are rejected unread."
    )
    timezone: str = Field(
        default="",
        description=(
            "The zone the games are played in (an IANA name, e.g. Europe/Paris): every time a "
            "post shows is given in it too, beside UTC ('2026-12-02 09:02 UTC / 10:02 CET'). "
            "Empty: UTC only. Discord shows each reader their own time instead."
        ),
    )
    fairness_url: str = Field(
        default="",
        description=(
            "An http(s) address where players read how to check the game's fairness (your "
            "copy of docs/FAIRNESS.md); posts link to it. Empty: posts say the host can "
            "send the procedure (`dealer fairness-script` prints the script)."
        ),
    )

    post_detail: Literal["brief", "full"] = Field(
        default="brief",
        description=(
            "How much posts and replies say: brief (the headline, what is due; the whole "
            "record through the `receipts` command, `dealer game show` and the status page) "
            "or full (every receipt, salt and sealed text inline). A route may name its own "
            "(|detail=full, docs/ROUTES.md)."
        ),
    )
    web_url: str = Field(
        default="",
        description=(
            "The status page's public http(s) address (https://casino.example.org): brief "
            "posts link each game's page and round there instead of printing hashes."
        ),
    )

    # -- e-mail (dealer-moderator[email]; docs/EMAIL.md) -----------------------------------
    email_from: str = Field(
        default="", description="dealer's own address: the From: of every mail it sends (DEALER_PUBLISH=email).",
    )
    email_list: str = Field(
        default="", description="The address public posts are mailed to (a mailing list); empty: public posts are not mailed.",
    )
    email_forwarders: str = Field(
        default="",
        description=(
            "Addresses trusted as forwarding dealers, comma-separated: a mail from one is read "
            "as a forwarded PM (its From: line is the sender, its date line the time sent)."
        ),
    )
    email_auth: Literal["on", "off"] = Field(
        default="on",
        description=(
            "on: a mail counts as from its From: address only when authenticated (DMARC or an "
            "aligned DKIM signature) or signed with the player's pass phrase; others are "
            "quarantined. off: trust a player's From: line (a closed setup only; warned at start); "
            "a forwarder's mails are authenticated all the same."
        ),
    )
    email_authserv_id: str = Field(
        default="",
        description=(
            "The authserv-id of the host's own mail server in Authentication-Results headers "
            "(e.g. mx.example.org); empty: dealer verifies DKIM signatures itself."
        ),
    )
    email_timezone: str = Field(
        default="UTC", description="The zone of a forwarded PM's date line that names none (an IANA name, e.g. Europe/Paris).",
    )
    imap_user: str = Field(default="", description="The IMAP login of DEALER_INBOX=imap:HOST[:PORT].")
    imap_password: str = Field(default="", description="The IMAP password.")
    imap_security: Literal["tls", "starttls", "none"] = Field(
        default="tls", description="IMAP: tls (IMAPS, port 993), starttls (port 143) or none (a local test server only).",
    )
    imap_folder: str = Field(default="INBOX", description="The IMAP folder read for new mail.")
    smtp_server: str = Field(default="", description="The SMTP server of DEALER_PUBLISH=email: HOST or HOST:PORT.")
    smtp_user: str = Field(default="", description="The SMTP login (empty: none).")
    smtp_password: str = Field(default="", description="The SMTP password.")
    smtp_security: Literal["tls", "starttls", "none"] = Field(
        default="starttls", description="SMTP: starttls (port 587), tls (port 465) or none (a local relay).",
    )
    # -- Discourse (dealer-moderator[discourse]; docs/DISCOURSE.md) ------------------------
    discourse_url: str = Field(default="", description="The Discourse site's address (https://forum.example.org).")
    discourse_api_key: str = Field(default="", description="A Discourse API key (Admin > API) allowed to post for DISCOURSE_USERNAME.")
    discourse_username: str = Field(default="", description="dealer's user on Discourse: posts as it, and ignores its own posts.")
    discourse_topics: str = Field(
        default="",
        description="Which topic is which game channel: '#proposals=12;#the-raceway=34' (topic ids).",
    )
    discourse_webhook_secret: str = Field(
        default="", description="The secret of Discourse's webhook to POST /discourse (empty: the route is off).",
    )
    # -- the HTTP endpoint (dealer-moderator[webhook]; docs/WEBHOOKS.md) -------------------
    webhook_listen: str = Field(
        default="",
        description=(
            "HOST:PORT where `dealer run` serves the webhook endpoint (POST /inbox, "
            "POST /discourse); empty: not served."
        ),
    )
    webhook_secret: str = Field(
        default="", description="The shared secret of POST /inbox's HMAC-SHA256 signatures (empty: /inbox is off).",
    )
    webhook_max_connections: int = Field(
        default=100, ge=1, le=10000,
        description=(
            "Connections the webhook endpoint keeps open at once; one more pushes out the oldest "
            "still sending its request head, or is refused (503). Keep it well below LimitNOFILE."
        ),
    )
    webhook_head_timeout: Seconds = Field(
        default=10.0, gt=0, le=600,
        description="Time a connection to the webhook endpoint has to send its whole request head (10s; a bare number is seconds).",
    )
    webhook_connection_seconds: Seconds = Field(
        default=60.0, gt=0, le=3600,
        description="Time a connection to the webhook endpoint may stay open at most, whatever it does (1m; a bare number is seconds).",
    )

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
    """Each ``DEALER_*`` name that dealer does not read, with the closest one it does.

    Names are compared without case, as the settings themselves are read.
    """
    known = known_names()
    found = []
    for name in names:
        upper = name.upper()
        if not upper.startswith(PREFIX) or upper in known:
            continue
        closest = difflib.get_close_matches(upper, known, n=1, cutoff=0.0)
        found.append((name, closest[0] if closest else ""))
    return found


def unknown_settings(
    environ: Mapping[str, str] | None = None, env_file: Path | None = None
) -> list[str]:
    """One line for each ``DEALER_*`` name in the environment or ``.env`` that is no
    setting (a typo such as ``DEALER_DATABSE_URL`` would otherwise be ignored in silence,
    and the command run on the default it meant to replace)."""
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
