"""Game options through pydantic, for every option of every game in the registry: loose
values are coerced, a bad value or an unknown key is one line naming the option, and a
record names a release option only when it differs from its default."""

from __future__ import annotations

import typing

import pytest

from stackelberg.games import GAME_NAMES, GAMES, ConfigError, make_game
from stackelberg.games.base import RECORD_IF_SET

OPTIONS = [(game, option) for game in GAME_NAMES for option in GAMES[game].options.model_fields]


def bad_value(field) -> object:
    """A value no option of this type accepts: a word for flags, counts and choices, an
    unknown role for role lists."""
    return (
        ["no_such_role"] if field.default is None or isinstance(field.default, tuple) else "maybe"
    )


@pytest.mark.parametrize(("game", "option"), OPTIONS)
def test_a_bad_value_is_one_line_naming_the_option(game, option):
    field = GAMES[game].options.model_fields[option]
    with pytest.raises(ConfigError) as err:
        make_game(game, {option: bad_value(field)})
    message = str(err.value)
    assert message.startswith(f"{game}: ") and option in message and "\n" not in message


@pytest.mark.parametrize("game", GAME_NAMES)
def test_an_unknown_option_lists_the_known_ones(game):
    known = ", ".join(GAMES[game].options.model_fields)
    with pytest.raises(ConfigError) as err:
        make_game(game, {"colour": "red"})
    assert str(err.value) == f"{game}: unknown option 'colour'; known options: {known}"


@pytest.mark.parametrize("game", GAME_NAMES)
def test_defaults_given_as_strings_give_the_default_options(game):
    """What ``--set KEY=VALUE`` passes (strings) reads as the typed defaults."""
    fields = GAMES[game].options.model_fields
    as_text = {
        name: str(f.default).lower() if isinstance(f.default, bool) else str(f.default)
        for name, f in fields.items()
        if not isinstance(f.default, tuple) and f.default is not None
    }
    assert make_game(game, as_text).config == make_game(game).config


@pytest.mark.parametrize("game", GAME_NAMES)
def test_a_count_given_as_a_flag_is_refused(game):
    counts = [n for n, f in GAMES[game].options.model_fields.items() if f.annotation is int]
    for name in counts:
        with pytest.raises(ConfigError, match=rf"^{game}: option {name}=True is not a valid int$"):
            make_game(game, {name: True})


@pytest.mark.parametrize("game", GAME_NAMES)
def test_release_options_are_recorded_only_when_changed(game):
    fields = GAMES[game].options.model_fields
    release = [n for n, f in fields.items() if RECORD_IF_SET in f.metadata]
    assert release, "each game has options of the paper's release"
    assert not set(release) & set(make_game(game).config.recorded())
    for name in release:
        annotation = fields[name].annotation
        other = (
            not fields[name].default
            if annotation is bool
            else next(v for v in typing.get_args(annotation) if v != fields[name].default)
        )
        assert make_game(game, {name: other}).config.recorded()[name] == other
