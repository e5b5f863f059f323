"""Pass phrases: a player's mail counts where its transport cannot prove who sent it
(docs/EMAIL.md); only a salted scrypt hash is stored, never the phrase."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

SCRYPT_N = 2 ** 14
"""scrypt's cost (RFC 7914; 16 MiB of memory with R = 8): about 50 ms a check."""
SCRYPT_R = 8
SCRYPT_P = 1
SALT_BYTES = 16
MIN_CHARS = 12
"""The shortest pass phrase a player may set (its words and spaces)."""
MAX_CHARS = 200

_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"
"""Letters and digits of a generated phrase: none that read alike (l/1, o/0, i)."""
GROUPS = 5
GROUP_CHARS = 4
"""A generated phrase: 5 groups of 4 characters of 31 (about 99 bits)."""

HIDDEN = "[hidden]"
"""What a stored body shows instead of a pass phrase."""

_USE_LINE = re.compile(r"^\s*passphrase\s+(?P<phrase>\S.*?)\s*$", re.IGNORECASE)
_SET_LINE = re.compile(r"^\s*set\s+passphrase(?:\s+(?P<phrase>.*?))?\s*$", re.IGNORECASE)


class BadPassphrase(ValueError):
    """A pass phrase a player may not set (too short, too long), saying why."""


def new_passphrase() -> str:
    """A new random pass phrase (``k3xq-9fmz-...``), drawn from :mod:`secrets`."""
    return "-".join(
        "".join(secrets.choice(_ALPHABET) for _ in range(GROUP_CHARS)) for _ in range(GROUPS)
    )


def normal(phrase: str) -> str:
    """A phrase as it is hashed (*interpretation*: case and spacing aside, as a mail client may change them)."""
    return " ".join(phrase.split()).lower()


def check_new(phrase: str) -> str:
    """``phrase`` as a player may set it; raise :class:`BadPassphrase` saying why not."""
    phrase = normal(phrase)
    if len(phrase) < MIN_CHARS:
        raise BadPassphrase(f"a pass phrase needs at least {MIN_CHARS} characters")
    if len(phrase) > MAX_CHARS:
        raise BadPassphrase(f"a pass phrase may have at most {MAX_CHARS} characters")
    return phrase


def hash_passphrase(phrase: str, salt: bytes | None = None) -> str:
    """The stored form of ``phrase``: ``scrypt$N$R$P$SALT$HASH`` (base64), salted anew."""
    salt = salt if salt is not None else secrets.token_bytes(SALT_BYTES)
    digest = _scrypt(normal(phrase), salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    return "$".join(("scrypt", str(SCRYPT_N), str(SCRYPT_R), str(SCRYPT_P), _b64(salt), _b64(digest)))


def matches(phrase: str, stored: str) -> bool:
    """Whether ``phrase`` is the one hashed in ``stored`` (a malformed ``stored``: no)."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        found = _scrypt(normal(phrase), base64.b64decode(salt), int(n), int(r), int(p))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(found, expected)


def _scrypt(phrase: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    # maxmem above OpenSSL's 32 MiB default: N = 2**14 with R = 8 needs 16 MiB and a margin.
    return hashlib.scrypt(phrase.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=64 * 1024 * 1024,
                          dklen=32)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@dataclass(frozen=True)
class Taken:
    """A body with its pass phrase line cut out, and the phrase (None when it had none)."""

    body: str
    phrase: str | None


def _first_line(body: str) -> tuple[list[str], int | None]:
    lines = body.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    return lines, first


def take_passphrase(body: str) -> Taken:
    """The phrase of a mail whose first line is ``passphrase WORDS``, and the body without it."""
    lines, first = _first_line(body)
    found = _USE_LINE.match(lines[first]) if first is not None else None
    if found is None or first is None:
        return Taken(body, None)
    rest = "\n".join(lines[:first] + lines[first + 1:]).strip("\n")
    return Taken(rest, found.group("phrase"))


def hide_passphrase(body: str) -> Taken:
    """``body`` with the phrase of a first line ``passphrase WORDS`` hidden (never stored)."""
    taken = take_passphrase(body)
    if taken.phrase is None:
        return taken
    lines, first = _first_line(body)
    assert first is not None
    lines[first] = f"passphrase {HIDDEN}"
    return Taken("\n".join(lines), taken.phrase)


def take_new_passphrase(body: str) -> Taken:
    """The phrase a PM sets (``set passphrase WORDS``), or None, and the body with it hidden."""
    lines, first = _first_line(body)
    found = _SET_LINE.match(lines[first]) if first is not None else None
    if found is None or first is None:
        return Taken(body, None)
    lines[first] = f"set passphrase {HIDDEN}"
    return Taken("\n".join(lines), found.group("phrase") or "")
