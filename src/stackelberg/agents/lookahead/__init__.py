"""The parts of ``strategist`` (after Strategist, Light et al. 2024): an Avalon player whose
moves come from a search over the legal options, with a value learned from self-play at the
leaves and a belief over the hidden roles.

- ``value``: what an Avalon player knows, as a fixed-size vector, and the fitted model from it
  to the chance that the player's camp wins (per camp logistic regression), its file;
- ``belief``: the role assignments a seat's knowledge allows, weighted by per-player logits
  for evil and for Merlin (the scripted player's suspicion, plus the LLM's ratings), and
  the ratings' parser;
- ``search``: the determinized lookahead: hidden roles drawn from the belief, the public game
  replayed under them with scripted players, each option played forward to the end of its
  team cycle, leaves valued by ``value``.

No LLM and no torch here: numpy only.
"""
