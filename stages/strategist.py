"""strategist: fit the strategist's value model (logistic regressions on scripted Avalon
self-play), then judge it on held-out seeds against the camp's base rate.

One work item. Writes models/strategist/avalon (the model and, in held_out.json, the
held-out comparison); logs the comparison to MLflow. Avalon only. The body is every
trained baseline's stage (``evaluation.trained_baselines``).
"""

from __future__ import annotations

from stackelberg.evaluation.trained_baselines import BaselineStage
from stackelberg.training.strategist import STRATEGIST

STAGE = BaselineStage(STRATEGIST)
#: the games this stage runs for (flows/run.py refuses the others)
GAMES = STAGE.games
plan, work, finish = STAGE.plan, STAGE.work, STAGE.finish
