# The two entry points of the README, and the study. Each installs into ./.venv first (idempotent).
.PHONY: run test study install

install:
	bash scripts/install.sh

run: install
	bash scripts/main.sh

test: install
	bash scripts/test.sh

study: install
	bash scripts/study.sh
