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


def sign_without_from(raw: bytes, domain: str, selector: str = SELECTOR) -> bytes:
    """``raw`` with a valid DKIM-Signature of ``domain`` whose ``h=`` leaves out From:
    (RFC 6376 forbids it and dkimpy will not make one, so it is made here by hand: relaxed
    canonicalization of Subject, Date and the body, signed by ``openssl``)."""
    import hashlib
    import re

    head, _, body = raw.partition(b"\r\n\r\n")
    fields = dict((name.strip().lower(), value.strip()) for name, _, value in
                  (line.partition(b":") for line in head.split(b"\r\n")))
    lines = [re.sub(rb"[ \t]+", b" ", line).rstrip(b" \t") for line in body.split(b"\r\n")]
    while lines and not lines[-1]:
        lines.pop()
    canonical_body = b"".join(line + b"\r\n" for line in lines)
    body_hash = base64.b64encode(hashlib.sha256(canonical_body).digest()).decode("ascii")
    tags = (f"v=1; a=rsa-sha256; c=relaxed/relaxed; d={domain}; s={selector}; h=subject:date; "
            f"bh={body_hash}; b=")
    signed = b"subject:" + fields[b"subject"] + b"\r\ndate:" + fields[b"date"] + b"\r\n"
    signed += b"dkim-signature:" + tags.encode("ascii")
    import tempfile

    with tempfile.NamedTemporaryFile() as key:  # openssl reads the key from a file, the data from stdin
        key.write(key_pair()[0])
        key.flush()
        signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key.name], input=signed, check=True,
                                   capture_output=True).stdout
    header = f"DKIM-Signature: {tags}{base64.b64encode(signature).decode('ascii')}\r\n".encode("ascii")
    return header + raw
