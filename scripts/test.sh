#!/usr/bin/env bash
# Install everything the tests need (tmux, the virtualenv, the pinned agent CLIs, CAO's
# own clients, headless Chromium), then run the linters, the type checker and the whole
# test suite: unit, integration (real tmux and HTTP) and end to end (real Codex and Claude
# Code against scripted model servers on loopback, driven by Baton and by CAO's clients).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
bash scripts/install-agent-clis.sh
bash scripts/install-cao.sh
bash scripts/install-test-tools.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy src
exec .venv/bin/python -m pytest "$@"
