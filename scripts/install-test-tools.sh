#!/usr/bin/env bash
# Install the tools the tests drive besides tmux and the agent CLIs: headless Chromium,
# which renders `baton report` pages in tests/integration/cockpit and drives the web
# cockpit in tests/integration/web (through Playwright, a dev dependency). Safe to run again.
set -euo pipefail

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-test-tools: please install Chromium with your package manager" >&2
    exit 1
fi
as_root apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
