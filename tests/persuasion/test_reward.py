import pytest

from stackelberg.persuasion.reward import RewardConfig, length_penalty, measurer_reward

POS = [[-1.0, -3.0], [-2.0]]  # means -2, -2 ; sums -4, -2
NEG = [[-4.0, -6.0, -8.0]]  # mean -6 ; sum -18


@pytest.mark.parametrize(
    "terms, aggregation, expected",
    [
        ("full", "mean", (-2 - 2) - (-6)),
        ("full", "sum", (-4 - 2) - (-18)),
        ("pos_only", "mean", -4.0),
        ("neg_only", "mean", 6.0),
        ("neg_only", "sum", 18.0),
    ],
)
def test_reward_terms(terms, aggregation, expected):
    parts = measurer_reward("short", POS, NEG, RewardConfig(terms=terms, aggregation=aggregation))
    assert parts.reward == pytest.approx(expected)
    assert parts.pos_means == (-2.0, -2.0) and parts.neg_sums == (-18.0,)


def test_clamp_and_length_penalty():
    cfg = RewardConfig(clamp=5.0)
    assert measurer_reward("x", [[0.0]], [[-100.0]], cfg).clamped == 5.0
    assert measurer_reward("x", [[-100.0]], [[0.0]], cfg).clamped == -5.0
    assert [length_penalty(w, cfg) for w in (0, 100, 150, 200, 400)] == [
        0.0,
        0.0,
        -5.0,
        -10.0,
        -10.0,
    ]
    long = " ".join(["word"] * 150)
    assert measurer_reward(long, [[0.0]], [[-1.0]], cfg).reward == pytest.approx(1.0 - 5.0)


def test_an_unparsed_completion_costs_the_off_format_penalty_alone():
    cfg = RewardConfig(off_format_penalty=0.75)
    fine = measurer_reward("I trust Player 2.", POS, NEG, cfg)
    off = measurer_reward("I trust Player 2.", POS, NEG, cfg, in_format=False)
    assert (fine.format_penalty, off.format_penalty) == (0.0, -0.75)
    assert off.reward == pytest.approx(fine.reward - 0.75)
    assert off.clamped == fine.clamped and off.length_penalty == fine.length_penalty
    # the release's scoring (no penalty) by default
    assert measurer_reward("x", POS, NEG, RewardConfig(), in_format=False).format_penalty == 0.0


def test_bad_config_names_the_value():
    with pytest.raises(ValueError, match="bogus"):
        RewardConfig(terms="bogus")
