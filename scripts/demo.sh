#!/usr/bin/env bash
# Install what is needed, put `baton` on the user's PATH (~/.local/bin/baton, see
# scripts/install-launcher.sh), run the whole loop on a sample project with the scripted
# agent, and end with how to run `baton` from any shell.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
launcher="$(bash scripts/install-launcher.sh 2>&1)" || true
status=0
.venv/bin/baton demo "$@" || status=$?
echo >&2
echo "$launcher" >&2
exit "$status"
