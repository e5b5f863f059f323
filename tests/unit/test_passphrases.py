"""Pass phrases: drawn from secrets, kept as a salted scrypt hash, cut out of a body."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings, strategies as st

from dealer.passphrases import (
    HIDDEN, MIN_CHARS, BadPassphrase, check_new, hash_passphrase, matches, new_passphrase,
    take_new_passphrase, take_passphrase,
)


def test_a_new_phrase_is_five_groups_of_four_unambiguous_characters() -> None:
    drawn = {new_passphrase() for _ in range(50)}
    assert len(drawn) == 50
    for phrase in drawn:
        assert re.fullmatch(r"[a-km-np-z2-9]{4}(-[a-km-np-z2-9]{4}){4}", phrase)
        assert not set(phrase) & set("01lio")


def test_the_hash_is_salted_scrypt_and_matches_only_its_phrase() -> None:
    first, second = hash_passphrase("correct horse battery"), hash_passphrase("correct horse battery")
    assert first != second  # a new salt each time
    scheme, n, r, p, salt, digest = first.split("$")
    assert (scheme, n, r, p) == ("scrypt", "16384", "8", "1")
    assert "horse" not in first
    assert matches("correct horse battery", first) and matches("correct horse battery", second)
    # Case and spacing aside (interpretation: a mail client may capitalise or fold).
    assert matches("  Correct   HORSE battery ", first)
    assert not matches("correct horse battery!", first)
    assert not matches("correct horse", first)


def test_a_known_hash_is_checked_against_its_salt() -> None:
    # The same phrase and salt give the same hash: the stored form is stable.
    stored = hash_passphrase("abcd-efgh-jkmn-pqrs-tuvw", salt=bytes(16))
    assert stored == hash_passphrase("ABCD-EFGH-JKMN-PQRS-TUVW", salt=bytes(16))
    assert stored.startswith("scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA==$")


@pytest.mark.parametrize("stored", ["", "plain", "md5$1$2$3$AA==$AA==", "scrypt$x$8$1$AA==$AA==",
                                    "scrypt$16384$8$1$not base64!$AA=="])
def test_a_malformed_stored_hash_matches_nothing(stored: str) -> None:
    assert not matches("anything at all", stored)


@settings(max_examples=5, deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_any_phrase_matches_its_own_hash_and_not_another(phrase: str) -> None:
    stored = hash_passphrase(phrase, salt=b"s" * 16)
    assert matches(phrase, stored)
    assert not matches(phrase + "x", stored)


def test_a_phrase_a_player_sets_is_long_enough() -> None:
    assert check_new("  Correct Horse  Battery ") == "correct horse battery"
    with pytest.raises(BadPassphrase, match=f"at least {MIN_CHARS} characters"):
        check_new("short one")
    with pytest.raises(BadPassphrase, match="at most 200"):
        check_new("x" * 201)


def test_the_first_line_passphrase_is_cut_out_of_the_body() -> None:
    taken = take_passphrase("\n  Passphrase  abcd efgh ijkl  \nbet gold 30\nbet black 10\n")
    assert taken.phrase == "abcd efgh ijkl"
    assert taken.body == "bet gold 30\nbet black 10"
    # Only the first line: a later one is a line of the message like any other.
    later = take_passphrase("bet gold 30\npassphrase abcd")
    assert (later.phrase, later.body) == (None, "bet gold 30\npassphrase abcd")
    assert take_passphrase("passphrase").phrase is None
    assert take_passphrase("").phrase is None


def test_a_set_passphrase_line_is_hidden_in_the_body() -> None:
    taken = take_new_passphrase("set passphrase correct horse battery\nthanks")
    assert taken.phrase == "correct horse battery"
    assert taken.body == f"set passphrase {HIDDEN}\nthanks"
    assert take_new_passphrase("SET PASSPHRASE").phrase == ""
    assert take_new_passphrase("bet gold 30\nset passphrase x").phrase is None
