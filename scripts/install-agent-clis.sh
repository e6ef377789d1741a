#!/usr/bin/env bash
# Install Node.js (if missing) and the pinned agent CLIs into .tools/agents, for the
# end-to-end tests. Nothing is installed globally except Debian's nodejs/npm.
set -euo pipefail
cd "$(dirname "$0")/.."

CODEX_VERSION=0.169.0
CLAUDE_CODE_VERSION=2.1.328
GEMINI_CLI_VERSION=0.61.0
OPENCODE_VERSION=1.18.33
prefix=.tools/agents

if ! command -v npm >/dev/null 2>&1; then
    as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi

want="codex-cli $CODEX_VERSION|$CLAUDE_CODE_VERSION (Claude Code)|$GEMINI_CLI_VERSION|$OPENCODE_VERSION"
have="$("$prefix/node_modules/.bin/codex" --version 2>/dev/null || true)|$("$prefix/node_modules/.bin/claude" --version 2>/dev/null || true)|$(GEMINI_CLI_NO_RELAUNCH=true "$prefix/node_modules/.bin/gemini" --version 2>/dev/null || true)|$("$prefix/node_modules/.bin/opencode" --version 2>/dev/null || true)"
if [ "$have" != "$want" ]; then
    mkdir -p "$prefix"
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
        "@openai/codex@$CODEX_VERSION" "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" \
        "@google/gemini-cli@$GEMINI_CLI_VERSION" "opencode-ai@$OPENCODE_VERSION" >/dev/null
fi
