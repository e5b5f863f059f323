"""The ruleset contract's shared types: durations, settings descriptions, stored state."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from pydantic import ValidationError

from dealer.games import rules_for
from dealer.games.base import STORED
from dealer.games.hall.state import HallSettings
from dealer.games.races.state import RacesSettings
from dealer.games.roulette.model import RouletteSettings
from dealer.games.roulette.testing import Shell

DURATIONS = [
    (RouletteSettings, "round_length"),
    (RouletteSettings, "preparation_length"),
    (RacesSettings, "seating_window"),
    (RacesSettings, "betting_window"),
    (RacesSettings, "idle_action_after"),
    (HallSettings, "phase_length"),
]


@pytest.mark.parametrize(("model", "field"), DURATIONS)
@pytest.mark.parametrize(
    ("text", "expected"),
    [("24h", timedelta(hours=24)), ("90m", timedelta(minutes=90)),
     ("1h30m", timedelta(minutes=90)), ("2d", timedelta(days=2)), (" 45s ", timedelta(seconds=45))],
)
def test_a_duration_is_written_with_its_unit(model, field, text, expected) -> None:  # type: ignore[no-untyped-def]
    assert getattr(model.model_validate({field: text}), field) == expected


@pytest.mark.parametrize(("model", "field"), DURATIONS)
@pytest.mark.parametrize("bare", ["2", "86400", "1.5", 2, 7200, 1.5])
def test_a_bare_number_is_refused_with_the_accepted_forms(model, field, bare) -> None:  # type: ignore[no-untyped-def]
    # `--set round_length=2` meant 2 seconds before; now it says how to write a duration.
    with pytest.raises(ValidationError) as exc:
        model.model_validate({field: bare})
    assert "has no unit" in str(exc.value)
    assert "24h, 90m, 1h30m or 2d" in str(exc.value)


@pytest.mark.parametrize(("model", "field"), DURATIONS)
def test_a_number_in_stored_json_is_seconds(model, field) -> None:  # type: ignore[no-untyped-def]
    # Older versions stored durations as numbers of seconds: the store's JSON still loads.
    assert getattr(model.model_validate({field: 5400}, context=STORED), field) == timedelta(minutes=90)
    assert getattr(model.model_validate({field: 90.0}, context=STORED), field) == timedelta(seconds=90)


@pytest.mark.parametrize(("model", "field"), DURATIONS)
@pytest.mark.parametrize("empty", ["0m", "0h0s"])
def test_a_phase_or_window_of_no_time_is_refused(model, field, empty) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError) as exc:
        model.model_validate({field: empty})
    assert "must last longer than zero (write it like 24h or 90m)" in str(exc.value)


def test_a_text_duration_is_not_read_as_seconds_even_when_stored() -> None:
    with pytest.raises(ValidationError):
        RouletteSettings.model_validate({"round_length": "7200"}, context=STORED)


def test_zero_still_switches_the_idle_action_off() -> None:
    # OR-11: `off`, empty and 0 mean off; 0 is not a bare duration here.
    assert RacesSettings.model_validate({"idle_action_after": "0"}).idle_action_after is None


def test_a_state_stored_by_an_older_version_loads() -> None:
    sh = Shell.create(rounds=2)
    stored = sh.state.model_dump(mode="json")
    assert stored["settings"]["round_length"] == "24h"  # what this version writes
    stored["settings"]["round_length"] = 86400
    stored["settings"]["preparation_length"] = 3600
    state = type(sh.state).from_stored(stored)
    assert state.settings.round_length == timedelta(hours=24)
    assert state.settings.preparation_length == timedelta(hours=1)
    # A step reads the stored text and has pydantic parse it: the same state.
    assert type(sh.state).from_stored(json.dumps(stored)) == state
    assert type(sh.state).from_stored(sh.state.model_dump_json()) == sh.state
    with pytest.raises(ValidationError):
        type(sh.state).model_validate(stored)  # outside the store, a number is refused


RULE = re.compile(r"^(SR|OR|GH)-\d+|^I-\d+$")


@pytest.mark.parametrize("kind", ["roulette", "races", "hall"])
def test_every_setting_names_its_rule(kind) -> None:  # type: ignore[no-untyped-def]
    for name, field in rules_for(kind).Settings.model_fields.items():
        rule, sep, meaning = (field.description or "").partition(": ")
        assert sep and meaning, f"{kind}.{name} has no 'RULE: meaning' description"
        assert RULE.match(rule), f"{kind}.{name}: {rule!r} is no rule id"


def test_reminder_offsets_need_a_unit_too() -> None:
    with pytest.raises(ValidationError, match="'6' has no unit: write a duration like 24h, 90m, 1h30m or 2d"):
        RouletteSettings(remind_before="6,1h")
    assert RouletteSettings(remind_before="6h, 30m").remind_before == "6h, 30m"
    # A stored game keeps what an older version meant by a bare number: seconds.
    stored = RouletteSettings.model_validate({"remind_before": "6, 1h"}, context=STORED)
    assert stored.remind_before == "6s, 1h"
