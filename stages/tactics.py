"""tactics: train the rl_ins tactic policy (REINFORCE on scripted ONUW self-play).

One work item: the training run, then the trained and the uniform tactic choice on the
same held-out seeds. Writes models/tactics/onuw (the policy, its shape, the training
curve and the comparison); logs the curve and the comparison to MLflow. ONUW only.
The body is every trained baseline's stage (``evaluation.trained_baselines``).
"""

from __future__ import annotations

from stackelberg.evaluation.trained_baselines import BaselineStage
from stackelberg.training.tactics import TACTICS

STAGE = BaselineStage(TACTICS)
#: the games this stage runs for (flows/run.py refuses the others)
GAMES = STAGE.games
plan, work, finish = STAGE.plan, STAGE.work, STAGE.finish
