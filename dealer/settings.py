"""Settings: the environment or ``.env``, prefix ``DEALER_`` (DESIGN.md, "Settings")."""

from __future__ import annotations

import re
from functools import lru_cache

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Every setting of the daemon; ``.env.example`` documents each one."""

    model_config = SettingsConfigDict(
        env_prefix="DEALER_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    database_url: str = Field(
        default="sqlite:///./var/dealer.db",
        description="SQLAlchemy URL of the store; postgresql+psycopg://... in production.",
    )
    inbox: str = Field(default="dir:./var/inbox", description="Where messages come from.")
    publish: str = Field(
        default="dir:./var/outbox", description="Where posts go: dir:PATH or stdout."
    )
    deadline_overrides: str = Field(
        default="",
        description=(
            "Admin deadline overrides: JSON object or 'KEY=VALUE;KEY=VALUE', keys GAME or "
            "GAME:DEADLINE, values an ISO UTC time, +12h / -30m, pause or now."
        ),
    )
    poll_interval: float = Field(
        default=5.0, description="Seconds between inbox scans while the daemon runs."
    )
    publish_retries: int = Field(
        default=5, description="Delivery attempts of a post before it is parked as failed."
    )
    max_message_bytes: int = Field(
        default=65536, description="Inbox files larger than this are rejected unread."
    )
    fairness_url: str = Field(
        default="",
        description=(
            "An http(s) address where players read how to check the game's fairness (your "
            "copy of docs/FAIRNESS.md); posts link to it. Empty: posts say the host can "
            "send the procedure (`dealer fairness-script` prints the script)."
        ),
    )

    @field_validator("fairness_url")
    @classmethod
    def _fairness_url(cls, value: str) -> str:
        value = value.strip()
        if value and not _URL.match(value):
            raise ValueError(
                f"{value!r} is not an http:// or https:// address (no spaces, quotes or <>)"
            )
        return value


_URL = re.compile(r"^https?://[^\s<>\"'`]+$")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings (read once; tests build their own ``Settings``)."""
    return Settings()
