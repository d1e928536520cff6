"""lspo: the lspo agent's latent strategies and their CFR-solved policy (Werewolf).

One work item: the speeches of the self-play records and of the candidate games are
clustered into latent strategies per role, the abstract game over them is solved by
outcome-sampling MCCFR, then one seat plays the solved and the uniform choice over latent
strategies on the same held-out seeds against scripted players. Writes models/lspo/werewolf
(the strategies, the policy, the solver's curve and the comparison); logs them to MLflow.
Werewolf only. The body is every trained baseline's stage (``evaluation.trained_baselines``).
"""

from __future__ import annotations

from stackelberg.evaluation.trained_baselines import BaselineStage
from stackelberg.training.lspo import LSPO

STAGE = BaselineStage(LSPO)
#: the games this stage runs for (flows/run.py refuses the others)
GAMES = STAGE.games
plan, work, finish = STAGE.plan, STAGE.work, STAGE.finish
