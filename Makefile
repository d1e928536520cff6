# The two entry points of the README, the study, the followers' and the limits' runs. Each
# installs into ./.venv first (idempotent).
.PHONY: run test fast study followers limits persuasion install

install:
	bash scripts/install.sh

run: install
	bash scripts/main.sh

test: install
	bash scripts/test.sh

# the fast lane: no model, no training, no Prefect; one test process per core
fast: install
	bash scripts/test.sh -m "not slow" -n auto

study: install
	bash scripts/study.sh

# ensemble vs single Measurer under a third follower, and its behaviour (docs/followers.md)
followers: install
	STUDY_PARAMS=configs/followers.yaml STUDY_WORKSPACE=runs/followers bash scripts/study.sh evaluate@werewolf

# one Refiner for all games, and training on the speaker's own view (docs/limits.md)
limits: install
	STUDY_PARAMS=configs/limits.yaml STUDY_WORKSPACE=runs/limits bash scripts/study.sh

# GRPO against the exact follower, held out against the Stackelberg optimum, and win rates
# among listening scripted players; then the Refiner trained against the embedded LLM
# Measurer on the same instances (docs/persuasion.md)
persuasion: install
	STUDY_PARAMS=configs/persuasion.yaml STUDY_WORKSPACE=runs/persuasion bash scripts/study.sh
	STUDY_PARAMS=configs/persuasion-llm.yaml STUDY_WORKSPACE=runs/persuasion-llm bash scripts/study.sh
