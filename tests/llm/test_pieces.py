"""Scored text is cut where the whole text's tokens fall (``llm.pieces``), on a tokenizer
whose tokens cross the pieces' boundaries (a word takes the space before it)."""

from __future__ import annotations

import pytest

from stackelberg.llm.pieces import common_prefix, nested_tokens

from .fake_server import BOS, word_spans, word_tokenize


def tokenize(texts: list[str]) -> list[list[int]]:
    return [word_tokenize(t, True) for t in texts]


def response_tokens(whole: str, response: str) -> list[int]:
    """The whole text's tokens that hold some of the response (by character spans)."""
    begin = len(whole) - len(response)
    ids = word_tokenize(whole, False)
    return [i for i, (_, end) in zip(ids, word_spans(whole), strict=True) if end > begin]


#: boundaries after a space, inside a word, and before whitespace-led or -only responses
CASES = [
    (
        "Player 3 says: ",
        ["I am the Seer.", "Play", ""],
        ["I agree.", " No.", " ", "\n"],
        "\nCarol:",
    ),
    ("Day 2. Play", ["er 3 is lying", "ers, listen"], ["ers", " wolf"], " said"),
    ("Vote now", [""], [" yes", "s", "", "  "], ""),
    ("Alice: I tru", ["st Bob"], ["st", "!"], ". Carol: "),
]


@pytest.mark.parametrize(("context", "candidates", "responses", "joiner"), CASES)
def test_every_pair_is_the_whole_text_and_scores_what_its_response_holds(
    context, candidates, responses, joiner
):
    toks = nested_tokens(tokenize, context, candidates, responses, joiner)
    for c, cand in enumerate(candidates):
        for r, resp in enumerate(responses):
            whole = context + cand + joiner + resp
            pieces = toks.context + toks.candidates[c] + toks.branches[c][r]
            if resp:
                assert pieces == word_tokenize(whole, True)
                assert toks.scored(c, r) == response_tokens(whole, resp)
            else:
                assert toks.branches[c][r] == [] and toks.scored(c, r) == []
    assert toks.context[0] == BOS


def test_the_context_is_shared_and_stops_before_a_merged_boundary():
    toks = nested_tokens(tokenize, "Player 3 says: ", ["I lie.", "I am."], ["Ok."], "\n")
    # ": " alone ends in a space token; in the whole text the space joins "I"
    assert toks.context == word_tokenize("Player 3 says:", True)
    assert all(cand[0] == word_tokenize(" I", False)[0] for cand in toks.candidates)


def test_a_context_with_no_token_of_its_own_is_refused():
    with pytest.raises(ValueError, match="no token of its own"):
        nested_tokens(lambda ts: [word_tokenize(t, False) for t in ts], "Play", [""], ["er"])


def test_common_prefix():
    assert common_prefix([1, 2, 3], [1, 2, 4]) == 2 and common_prefix([1], [1, 5]) == 1
    assert common_prefix([], [1]) == 0
