#!/usr/bin/env bash
# Run CAO 2.5.4's own end-to-end tests, from its published source distribution, against
# `baton serve` with the real Codex offline (a scripted OpenAI model server on loopback).
# Installs what it needs first: the source distribution and a virtualenv with CAO and
# pytest, both in .tools/cao-suite. Safe to run again; it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."

CAO_VERSION=2.5.4
PYTEST_VERSION=9.0.3 # CAO 2.5.4's uv.lock
PYTEST_ASYNCIO_VERSION=1.4.0
PYTEST_TIMEOUT_VERSION=2.4.0 # as requirements.lock
prefix=.tools/cao-suite
PYTHON="${PYTHON:-python3}"

usage() {
    cat <<'TEXT'
usage: bash scripts/cao-suite.sh [--all] [--install-only] [pytest arguments]

Runs CAO 2.5.4's test/e2e (from its sdist on PyPI) against a fresh `baton serve` whose
Codex terminals talk to the scripted model server, through the pytest plugin in
tests/e2e/cao/plugin (CAO's `cao_server` fixture yields the `baton serve`). The tests
that cannot apply are deselected by the list in tests/e2e/cao/suite_selection.py, each
with its reason (docs/server.md, "CAO's own suite against baton serve"). Prints one line
per test (outcome, first failure line) and per deselection, then totals and duration.

  bash scripts/cao-suite.sh            the CI subset: CAO's handoff, assign, send_message,
                                       allowed_tools, skills and supervisor tests (Codex)
  bash scripts/cao-suite.sh --all      all of CAO's test/e2e, minus the deselected list
  bash scripts/cao-suite.sh test/e2e/test_handoff.py -x   named CAO tests (paths are
                                       relative to CAO's source root), pytest options
  bash scripts/cao-suite.sh --install-only   fetch and install, run nothing

Exit status: 0 when no test failed. The same run is tests/e2e/test_cao_suite.py.
TEXT
}

install_only=false
case "${1:-}" in
    -h | --help)
        usage
        exit 0
        ;;
    --install-only)
        install_only=true
        shift
        ;;
esac

bash scripts/install-agent-clis.sh
bash scripts/install-cao.sh

[ -x "$prefix/venv/bin/python" ] || "$PYTHON" -m venv "$prefix/venv"
src="$prefix/src/cli_agent_orchestrator-$CAO_VERSION"
if [ ! -f "$src/test/e2e/conftest.py" ]; then
    mkdir -p "$prefix/dist" "$prefix/src"
    "$prefix/venv/bin/python" -m pip download -q --disable-pip-version-check \
        --no-binary :all: --no-deps \
        -d "$prefix/dist" "cli-agent-orchestrator==$CAO_VERSION"
    tar -xzf "$prefix/dist/cli_agent_orchestrator-$CAO_VERSION.tar.gz" -C "$prefix/src"
fi
needed="import cli_agent_orchestrator, pytest, pytest_asyncio, pytest_timeout"
if ! "$prefix/venv/bin/python" -c "$needed" 2>/dev/null; then
    "$prefix/venv/bin/python" -m pip install -q --disable-pip-version-check \
        "cli-agent-orchestrator==$CAO_VERSION" "pytest==$PYTEST_VERSION" \
        "pytest-asyncio==$PYTEST_ASYNCIO_VERSION" "pytest-timeout==$PYTEST_TIMEOUT_VERSION"
fi
$install_only && exit 0
[ -x .venv/bin/python ] || bash scripts/bootstrap.sh
exec .venv/bin/python -m tests.e2e.cao.suite "$@"
