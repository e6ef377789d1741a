#!/usr/bin/env bash
# Install the pinned CLI Agent Orchestrator (cli-agent-orchestrator) into its own
# virtualenv, .tools/cao, for the tests that drive `baton serve` with CAO's own clients
# (its MCP tools and the `cao` CLI). Its own venv, because CAO pins libtmux<0.53.1 and
# Baton pins a newer one. Safe to run again; it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."

CAO_VERSION=2.5.4
prefix=.tools/cao
PYTHON="${PYTHON:-python3}"

installed() {
    "$prefix/bin/python" -c \
        'import importlib.metadata as m; print(m.version("cli-agent-orchestrator"))' \
        2>/dev/null || true
}

if [ "$(installed)" != "$CAO_VERSION" ]; then
    [ -x "$prefix/bin/python" ] || "$PYTHON" -m venv "$prefix"
    "$prefix/bin/python" -m pip install -q --disable-pip-version-check \
        "cli-agent-orchestrator==$CAO_VERSION"
fi
[ "$(installed)" = "$CAO_VERSION" ] || {
    echo "install-cao: cli-agent-orchestrator $CAO_VERSION is not importable from $prefix" >&2
    exit 1
}
