"""Settings: the environment or ``.env``, prefix ``DEALER_`` (DESIGN.md, "Settings")."""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field
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



@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings (read once; tests build their own ``Settings``)."""
    return Settings()
