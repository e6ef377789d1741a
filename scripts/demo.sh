#!/usr/bin/env bash
# Install what is needed, then run the whole loop on a sample project with the scripted agent.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/baton demo "$@"
