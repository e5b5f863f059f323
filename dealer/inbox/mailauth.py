"""Who really sent a mail: its ``From:`` domain authenticated by the host's mail server's
``Authentication-Results`` (its own authserv-id only) or by dealer verifying DKIM itself
(dealer-moderator[email]; docs/EMAIL.md gives the interpretations: alignment to a parent
domain, ``l=`` and a ``h=`` without ``From`` authenticate nothing, a DNS timeout fails)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

log = logging.getLogger(__name__)

DNS_TIMEOUT = 5.0
"""Seconds one DNS lookup of a DKIM key may take."""
DNS_CACHE_SECONDS = 3600.0
"""How long a key's TXT record (or its absence) is kept."""

DnsFunc = Callable[..., bytes | None]
"""dkimpy's DNS function: ``f(name: bytes, timeout=...) -> TXT record bytes or None``."""


@dataclass(frozen=True)
class Verdict:
    """Whether a mail is authenticated for its ``From:`` domain, and how or why not."""

    authenticated: bool
    how: str


class DnsTimeout(Exception):
    """A DNS lookup got no answer (a temporary failure, unlike a name that does not exist)."""


def resolve_txt(name: bytes, timeout: float = DNS_TIMEOUT) -> bytes | None:
    """A DKIM key's TXT record, its strings joined; None when there is none; :class:`DnsTimeout`."""
    import dns.exception
    import dns.resolver

    try:
        answer = dns.resolver.resolve(name.decode("ascii").rstrip("."), "TXT", lifetime=timeout,
                                      raise_on_no_answer=False)
    except (dns.resolver.NXDOMAIN, UnicodeDecodeError):
        return None
    except dns.exception.DNSException as exc:  # a timeout, every server failing, no resolver
        raise DnsTimeout(f"{type(exc).__name__}: {exc}") from None
    for record in answer:
        return b"".join(record.strings)
    return None


class CachedDns:
    """A DNS function for dkimpy that caches each answer and bounds each lookup; a timeout fails
    the signature, is not cached, and is remembered in :attr:`timeouts` for the verdict."""

    def __init__(self, lookup: DnsFunc = resolve_txt, *, timeout: float = DNS_TIMEOUT,
                 keep_seconds: float = DNS_CACHE_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.lookup = lookup
        self.timeout = timeout
        self.keep_seconds = keep_seconds
        self.clock = clock
        self._kept: dict[bytes, tuple[float, bytes | None]] = {}
        self.timeouts: list[str] = []

    def __call__(self, name: bytes, timeout: float | None = None) -> bytes | None:
        import dkim

        now = self.clock()
        kept = self._kept.get(name)
        if kept is not None and now - kept[0] < self.keep_seconds:
            return kept[1]
        try:
            answer = self.lookup(name, timeout=min(timeout or self.timeout, self.timeout))
        except DnsTimeout as exc:
            self.timeouts.append(name.decode("ascii", "replace"))
            raise dkim.DnsTimeoutError(str(exc)) from None
        self._kept[name] = (now, answer)
        return answer


class MailAuthenticator:
    """Decides whether a mail is authenticated for its ``From:`` domain (:meth:`check`)."""

    def __init__(self, authserv_id: str = "", dns: DnsFunc | None = None) -> None:
        self.authserv_id = authserv_id.strip().lower()
        self.dns = dns if dns is not None else CachedDns()

    def check(self, raw: bytes, address: str) -> Verdict:
        """The verdict on ``raw`` (the whole mail as received) sent from ``address``."""
        domain = address.rpartition("@")[2].strip().lower()
        if not domain:
            return Verdict(False, "the From: address has no domain")
        if self.authserv_id:
            verdict = server_verdict(raw, domain, self.authserv_id)
            if verdict is not None:
                return verdict
        return self.dkim_verdict(raw, domain)

    def dkim_verdict(self, raw: bytes, domain: str) -> Verdict:
        """Authenticated by the first DKIM signature of ``raw`` that verifies for an aligned domain."""
        import dkim

        count = sum(1 for name, _ in _headers(raw) if name == "dkim-signature")
        if count == 0:
            return Verdict(False, "the mail has no DKIM signature and the host's mail server gave no verdict")
        seen: list[str] = []
        for index in range(count):
            signer = dkim.DKIM(raw, minkey=1024)
            timeouts = len(getattr(self.dns, "timeouts", ()))
            try:
                valid = signer.verify(idx=index, dnsfunc=self.dns)
            except dkim.DKIMException as exc:
                seen.append("a signature whose body hash does not match: the body was changed after "
                            "it was signed" if "body hash mismatch" in str(exc)
                            else f"a signature that cannot be verified ({exc})")
                continue
            fields = signer.signature_fields or {}
            signing = (signer.domain or b"").decode("ascii", "replace").lower()
            if not valid:
                late = len(getattr(self.dns, "timeouts", ())) > timeouts
                seen.append(f"a signature of {signing} that does not verify"
                            + (" (its key's DNS lookup timed out)" if late else
                               " (its key is not published, or the signed headers were changed)"))
            elif b"l" in fields:
                seen.append(f"a signature of {signing} covering only part of the body (l=)")
            elif b"from" not in _signed_headers(fields):
                seen.append(f"a signature of {signing} that does not sign From:")
            elif not aligned(signing, domain):
                seen.append(f"a valid signature of {signing}, another domain than {domain}")
            else:
                return Verdict(True, f"DKIM signature of {signing} verified by dealer")
        return Verdict(False, "; ".join(seen))


def _signed_headers(fields: dict[bytes, bytes]) -> list[bytes]:
    return [name.strip().lower() for name in fields.get(b"h", b"").split(b":")]


def aligned(signing: str, domain: str) -> bool:
    """Whether a signing domain is the ``From:`` domain or a parent of it (stricter than DMARC's relaxed alignment)."""
    signing, domain = signing.strip(".").lower(), domain.strip(".").lower()
    return bool(signing) and (domain == signing or domain.endswith("." + signing))


def server_verdict(raw: bytes, domain: str, authserv_id: str) -> Verdict | None:
    """The host's mail server's DKIM or DMARC verdict for ``authserv_id``, or None."""
    import authres

    results: list[Any] = []
    for name, value in _headers(raw):
        if name != "authentication-results":
            continue
        try:
            header = authres.AuthenticationResultsHeader.parse_value(value)
        except Exception as exc:  # a header the parser cannot read counts for nothing
            log.info("an Authentication-Results header that cannot be read is ignored: %s", exc)
            continue
        if str(header.authserv_id or "").strip().lower() != authserv_id:
            continue  # added by someone else: not the host's server
        results.extend(r for r in header.results if str(r.method).lower() in ("dmarc", "dkim"))
    if not results:
        return None
    for result in results:
        method, outcome = str(result.method).lower(), str(result.result).lower()
        props = {f"{p.type}.{p.name}".lower(): str(p.value or "").lower() for p in result.properties}
        if outcome != "pass":
            continue
        if method == "dmarc" and props.get("header.from", domain) == domain:
            return Verdict(True, f"DMARC pass for {domain} ({authserv_id})")
        if method == "dkim":
            signing = props.get("header.d") or props.get("header.i", "").rpartition("@")[2]
            if aligned(signing, domain):
                return Verdict(True, f"DKIM pass by {signing} ({authserv_id})")
    said = ", ".join(f"{str(r.method).lower()}={str(r.result).lower()}" for r in results)
    return Verdict(False, f"the host's mail server ({authserv_id}) did not authenticate {domain}: {said}")


def _headers(raw: bytes) -> list[tuple[str, str]]:
    """The mail's header fields in order (name lower case, value unfolded)."""
    import email
    import email.policy

    message = email.message_from_bytes(raw.split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0] + b"\r\n\r\n",
                                       policy=email.policy.compat32)
    return [(name.lower(), " ".join(str(value).split())) for name, value in message.items()]

