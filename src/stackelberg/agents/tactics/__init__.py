"""The parts of ``rl_ins`` (after "Learning to Discuss Strategically", Jin et al. 2024): a
small trained policy picks the ONUW speaking tactic, the player then speaks in it.

- ``speech``: the scripted ONUW player that speaks in a given tactic (templates its
  scripted listeners parse), so the policy trains and plays without an LLM;
- ``features``: what a player knows at a speech, as a fixed-size vector;
- ``policy``: the network over those features (softmax over the six tactics), its file.

``torch`` is imported by ``policy`` only.
"""
