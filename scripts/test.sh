#!/usr/bin/env bash
# Install everything the tests need (tmux, the virtualenv, the pinned agent CLIs, CAO's
# own clients and its own test suite, headless Chromium), then run the linters, the type checker and the whole
# test suite: unit, integration (real tmux and HTTP) and end to end (real Codex and Claude
# Code against scripted model servers on loopback, driven by Baton and by CAO's clients),
# on four pytest-xdist workers per CPU, two while end-to-end tests wait to start (the
# integration tests wait more than they compute). Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    cat <<'TEXT'
usage: bash scripts/test.sh [pytest arguments]

Installs what the tests need, runs ruff and mypy, then the whole suite (every tier) on
four workers per CPU, two while end-to-end tests wait to start (pytest-xdist -n auto,
see tests/conftest.py; --dist loadgroup: tests/support/scheduling.py decides which
tests share a worker and when the other two workers per CPU join). Arguments are passed
to pytest:
  bash scripts/test.sh -q                      everything, quietly (what CI runs)
  bash scripts/test.sh -n 0                    everything, in this one process
  PYTEST_XDIST_AUTO_NUM_WORKERS=2 bash scripts/test.sh   on two workers
  bash scripts/test.sh tests/integration/server   one folder, one file or one test

The tiers, once installed (.venv/bin/pytest, from the repository's root):
  pytest                    the fast tier: the unit tests, no tmux, no server (seconds)
  pytest -m integration     real tmux and HTTP on 127.0.0.1 (tests/integration)
  pytest -m e2e             the real Codex and Claude Code against scripted models (tests/e2e)
  pytest --all-tiers        all three, as this script runs them (add -n auto for workers)
CAO 2.5.4's own e2e tests against `baton serve` are one e2e test here
(tests/e2e/test_cao_suite.py, the CI subset); bash scripts/cao-suite.sh --help for more.
A test's tier is its folder; naming paths runs exactly those tests, whatever their tier.
TEXT
}

case "${1:-}" in
    -h | --help)
        usage
        exit 0
        ;;
esac

bash scripts/bootstrap.sh
bash scripts/install-agent-clis.sh
bash scripts/install-cao.sh
bash scripts/cao-suite.sh --install-only
bash scripts/install-test-tools.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy src
# Collect once with bytecode on, so pytest caches each test module as rewritten for its
# assertions: with PYTHONDONTWRITEBYTECODE set (as on CI machines), every worker would
# otherwise rewrite and compile them all itself (5 s of CPU each instead of 2). It
# collects what the run will (the same arguments); an error here shows in the run itself.
PYTHONDONTWRITEBYTECODE= .venv/bin/python -m pytest --all-tiers --collect-only -q \
    -p no:cacheprovider "$@" >/dev/null 2>&1 || true
exec .venv/bin/python -m pytest --all-tiers -n auto --dist loadgroup --durations=15 "$@"
