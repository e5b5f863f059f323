"""Whether a mail is authenticated for its From: domain: the host's server's verdict or
DKIM verified by dealer (a test key; a DNS stub answers its selector's record)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("dkim")
pytest.importorskip("authres")

sys.path.insert(0, str(Path(__file__).parents[2] / "integration"))
from mailsign import DnsStub, key_pair, sign, sign_without_from  # noqa: E402

from dealer.inbox.mailauth import CachedDns, MailAuthenticator, aligned  # noqa: E402

ME = "mx.dealer.example"


def mail(sender: str = "Alice <alice@example.org>", body: str = "bet gold 30\n", ident: str = "m1@example.org") -> bytes:
    return (f"From: {sender}\r\nTo: dealer@dealer.example\r\nSubject: move\r\nMessage-ID: <{ident}>\r\n"
            "Date: Tue, 01 Dec 2026 10:00:00 +0000\r\n\r\n" + body.replace("\n", "\r\n")).encode("utf-8")


@pytest.fixture
def dns() -> DnsStub:
    stub = DnsStub()
    for domain in ("example.org", "evil.example"):
        stub.publish(domain)
    return stub


def check(raw: bytes, dns: DnsStub, address: str = "alice@example.org", authserv_id: str = ""):  # type: ignore[no-untyped-def]
    return MailAuthenticator(authserv_id, dns=CachedDns(dns)).check(raw, address)


def test_a_mail_signed_by_its_from_domain_is_authenticated(dns: DnsStub) -> None:
    verdict = check(sign(mail(), "example.org"), dns)
    assert verdict.authenticated and verdict.how == "DKIM signature of example.org verified by dealer"


@pytest.mark.parametrize(("raw", "why"), [
    (lambda: mail(), "the mail has no DKIM signature and the host's mail server gave no verdict"),
    (lambda: sign(mail(), "evil.example"), "a valid signature of evil.example, another domain than example.org"),
    (lambda: sign(mail(), "example.org").replace(b"bet gold 30", b"bet gold 99"),
     "a signature whose body hash does not match: the body was changed after it was signed"),
    (lambda: sign(mail("Mallory <m@evil.example>"), "evil.example").replace(b"Mallory <m@evil.example>",
                                                                          b"Alice <alice@example.org>"),
     "a signature of evil.example that does not verify"),
    (lambda: sign(mail(), "example.org", key_pair(2048)[0]), "a signature of example.org that does not verify"),
    (lambda: sign(mail(), "example.org", length=True), "a signature of example.org covering only part of the body (l=)"),
    (lambda: sign(mail(), "example.org", selector="unpublished"), "a signature of example.org that does not verify"),
], ids=["unsigned", "another-domain", "body-altered", "forged-from", "another-key", "body-length",
        "unpublished-key"])
def test_what_is_not_authenticated_says_why(raw, why: str, dns: DnsStub) -> None:  # type: ignore[no-untyped-def]
    verdict = check(raw(), dns)
    assert not verdict.authenticated
    assert why in verdict.how


def test_a_signature_that_leaves_from_unsigned_authenticates_nothing(dns: DnsStub) -> None:
    import dkim

    raw = sign_without_from(mail(), "example.org")
    assert dkim.verify(raw, dnsfunc=dns)  # valid as a signature: anyone could put any From: on it
    verdict = check(raw, dns)
    assert not verdict.authenticated
    assert "a signature of example.org that does not sign From:" in verdict.how


def test_one_good_signature_among_others_is_enough(dns: DnsStub) -> None:
    # A list server or the sender's provider may add its own signature on top.
    raw = sign(sign(mail(), "example.org"), "evil.example")
    assert check(raw, dns).authenticated


def test_the_host_servers_verdict_decides_and_a_strangers_header_is_ignored(dns: DnsStub) -> None:
    def with_results(header: str, raw: bytes) -> bytes:
        return f"Authentication-Results: {header}\r\n".encode() + raw

    dmarc = with_results(f"{ME}; spf=fail smtp.mailfrom=x.example; dmarc=pass header.from=example.org", mail())
    assert check(dmarc, dns, authserv_id=ME).how == f"DMARC pass for example.org ({ME})"
    dkim_pass = with_results(f"{ME.upper()} 1; dkim=pass (2048-bit key) header.d=example.org header.s=s1", mail())
    assert check(dkim_pass, dns, authserv_id=ME).authenticated
    parent = with_results(f"{ME}; dkim=pass header.i=@example.org", mail("a@news.example.org"))
    assert check(parent, dns, "a@news.example.org", authserv_id=ME).authenticated
    # The server said no, though the signature verifies: its verdict stands.
    refused = with_results(f"{ME}; dkim=fail header.d=example.org; dmarc=fail header.from=example.org",
                           sign(mail(), "example.org"))
    verdict = check(refused, dns, authserv_id=ME)
    assert not verdict.authenticated and "dkim=fail, dmarc=fail" in verdict.how
    unaligned = with_results(f"{ME}; dkim=pass header.d=evil.example", mail())
    assert not check(unaligned, dns, authserv_id=ME).authenticated
    other_from = with_results(f"{ME}; dmarc=pass header.from=evil.example", mail())
    assert not check(other_from, dns, authserv_id=ME).authenticated
    # Someone else's header counts for nothing: dealer verifies the signature itself.
    stranger = with_results("mx.evil.example; dkim=pass header.d=example.org; dmarc=pass header.from=example.org",
                            mail())
    assert "no DKIM signature" in check(stranger, dns, authserv_id=ME).how
    assert check(with_results("mx.evil.example; dmarc=pass", sign(mail(), "example.org")), dns,
                 authserv_id=ME).authenticated
    # No authserv-id set: every such header is a stranger's.
    assert not check(dmarc, dns).authenticated
    # A header of ours with no DKIM or DMARC result leaves the check to dealer.
    spf_only = with_results(f"{ME}; spf=pass smtp.mailfrom=example.org", sign(mail(), "example.org"))
    assert check(spf_only, dns, authserv_id=ME).how == "DKIM signature of example.org verified by dealer"
    unreadable = with_results(f"{ME}; dkim=", sign(mail(), "example.org"))  # ignored: dealer checks
    assert check(unreadable, dns, authserv_id=ME).authenticated


def test_dns_answers_are_cached_and_a_timeout_is_said_and_not_cached(dns: DnsStub) -> None:
    clock = [0.0]
    cached = CachedDns(dns, keep_seconds=60, clock=lambda: clock[0])
    auth = MailAuthenticator(dns=cached)
    for n in range(3):
        assert auth.check(sign(mail(ident=f"m{n}@example.org"), "example.org"), "alice@example.org").authenticated
    assert dns.lookups == [b"test._domainkey.example.org."]
    clock[0] = 61.0
    dns.timing_out = True
    verdict = auth.check(sign(mail(), "example.org"), "alice@example.org")
    assert not verdict.authenticated and "its key's DNS lookup timed out" in verdict.how
    dns.timing_out = False
    assert auth.check(sign(mail(), "example.org"), "alice@example.org").authenticated
    assert len(dns.lookups) == 3


@pytest.mark.parametrize(("signing", "domain", "expected"), [
    ("example.org", "example.org", True),
    ("Example.ORG.", "example.org", True),
    ("example.org", "mail.example.org", True),
    ("mail.example.org", "example.org", False),
    ("ample.org", "example.org", False),
    ("example.org", "example.org.evil.example", False),
    ("", "example.org", False),
])
def test_alignment(signing: str, domain: str, expected: bool) -> None:
    assert aligned(signing, domain) is expected


def test_the_real_lookup_reads_a_txt_record_and_tells_a_missing_name_from_a_failure(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import dns.exception
    import dns.message
    import dns.name
    import dns.rdataclass
    import dns.rdatatype
    import dns.resolver

    from dealer.inbox.mailauth import DnsTimeout, resolve_txt

    asked: list[tuple[str, str, float]] = []

    def answering(name: str, kind: str, lifetime: float, raise_on_no_answer: bool) -> dns.resolver.Answer:
        asked.append((name, kind, lifetime))
        response = dns.message.from_text(
            f"id 1\nopcode QUERY\nrcode NOERROR\nflags QR RD RA\n;QUESTION\n{name}. IN TXT\n"
            f';ANSWER\n{name}. 300 IN TXT "v=DKIM1; k=rsa; " "p=ABC"\n')
        return dns.resolver.Answer(dns.name.from_text(name), dns.rdatatype.TXT, dns.rdataclass.IN, response)

    monkeypatch.setattr(dns.resolver, "resolve", answering)
    assert resolve_txt(b"test._domainkey.example.org.", timeout=2) == b"v=DKIM1; k=rsa; p=ABC"
    assert asked == [("test._domainkey.example.org", "TXT", 2)]

    def missing(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise dns.resolver.NXDOMAIN()

    monkeypatch.setattr(dns.resolver, "resolve", missing)
    assert resolve_txt(b"nothing._domainkey.example.org.") is None

    def slow(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise dns.exception.Timeout(timeout=5)

    monkeypatch.setattr(dns.resolver, "resolve", slow)
    with pytest.raises(DnsTimeout, match="Timeout"):
        resolve_txt(b"test._domainkey.example.org.")
