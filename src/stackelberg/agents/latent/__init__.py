"""The parts of ``lspo`` (after LSPO, Xu et al. 2025): Werewolf speeches grouped into a few
latent strategies per role, and a policy over them solved on the abstract game.

- ``acts``: the speech acts the scripted listeners hear, the scripted player that speaks
  in a given act, and the coarse information set of a speech;
- ``clusters``: speeches embedded (TF-IDF) and clustered (k-means) into latent strategies;
- ``cfr``: regret matching tables and the solved policy's file.
"""
