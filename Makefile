# The two entry points of the README. Both install into ./.venv first (idempotent).
.PHONY: run test install

install:
	bash scripts/install.sh

run: install
	bash scripts/main.sh

test: install
	bash scripts/test.sh
