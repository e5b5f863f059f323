"""DKIM for tests: a key made here, mails signed with it, and a DNS stub that answers the
selector's TXT record (dkimpy's ``dnsfunc``), so no test reaches a real DNS server."""

from __future__ import annotations

import base64
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache

import dkim

SELECTOR = "test"


@lru_cache(maxsize=None)
def key_pair(bits: int = 1024) -> tuple[bytes, str]:
    """A new RSA private key (PEM) and its public key as a DKIM record's ``p=`` (made by
    ``openssl`` once per test process)."""
    private = subprocess.run(["openssl", "genrsa", "-traditional", str(bits)], check=True,
                             capture_output=True).stdout
    public = subprocess.run(["openssl", "rsa", "-pubout", "-outform", "DER"], input=private, check=True,
                            capture_output=True).stdout
    return private, base64.b64encode(public).decode("ascii")


@dataclass
class DnsStub:
    """Answers ``SELECTOR._domainkey.DOMAIN`` TXT for each domain it publishes; counts
    lookups (a cache is seen working) and can be told to time out."""

    records: dict[bytes, bytes] = field(default_factory=dict)
    lookups: list[bytes] = field(default_factory=list)
    timing_out: bool = False

    def publish(self, domain: str, public: str | None = None, selector: str = SELECTOR) -> None:
        record = f"v=DKIM1; k=rsa; p={public or key_pair()[1]}".encode("ascii")
        self.records[f"{selector}._domainkey.{domain}.".encode("ascii")] = record

    def __call__(self, name: bytes, timeout: float = 5) -> bytes | None:
        from dealer.inbox.mailauth import DnsTimeout

        self.lookups.append(name)
        if self.timing_out:
            raise DnsTimeout("the stub was told to time out")
        return self.records.get(name)


def sign(raw: bytes, domain: str, private: bytes | None = None, selector: str = SELECTOR,
         length: bool = False, headers: list[bytes] | None = None) -> bytes:
    """``raw`` with a DKIM-Signature of ``domain`` on top (relaxed/relaxed)."""
    signature = dkim.sign(raw, selector.encode(), domain.encode(), private or key_pair()[0],
                          canonicalize=(b"relaxed", b"relaxed"), length=length,
                          include_headers=headers or [b"from", b"to", b"subject", b"date", b"message-id"])
    return signature + raw
