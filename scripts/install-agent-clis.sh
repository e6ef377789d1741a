#!/usr/bin/env bash
# Install Node.js (if missing) and the pinned agent CLIs into .tools/agents, for the
# end-to-end tests. Nothing is installed globally except Debian's nodejs/npm.
set -euo pipefail
cd "$(dirname "$0")/.."

CODEX_VERSION=0.169.0
CLAUDE_CODE_VERSION=2.1.328
GEMINI_CLI_VERSION=0.61.0
QWEN_CODE_VERSION=0.24.4
# Qwen Code needs Node.js 22 or newer. The pinned Node.js from the npm registry
# (node-linux-<arch>) is installed into .tools/node and runs Qwen Code alone, through
# .tools/agents/bin/qwen; the other CLIs keep the machine's node.
QWEN_NODE_VERSION=22.23.3
prefix=.tools/agents
node_prefix=.tools/node

if ! command -v npm >/dev/null 2>&1; then
    as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi

case "$(uname -m)" in
    x86_64 | amd64) node_arch=x64 ;;
    aarch64 | arm64) node_arch=arm64 ;;
    *) echo "install-agent-clis: no pinned Node.js for $(uname -m)" >&2; exit 1 ;;
esac

want="codex-cli $CODEX_VERSION|$CLAUDE_CODE_VERSION (Claude Code)|$GEMINI_CLI_VERSION|v$QWEN_NODE_VERSION $QWEN_CODE_VERSION"
have="$("$prefix/node_modules/.bin/codex" --version 2>/dev/null || true)|$("$prefix/node_modules/.bin/claude" --version 2>/dev/null || true)|$(GEMINI_CLI_NO_RELAUNCH=true "$prefix/node_modules/.bin/gemini" --version 2>/dev/null || true)|$("$node_prefix/node_modules/.bin/node" --version 2>/dev/null || true) $("$prefix/bin/qwen" --version 2>/dev/null || true)"
if [ "$have" != "$want" ]; then
    mkdir -p "$prefix/bin" "$node_prefix"
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
        "@openai/codex@$CODEX_VERSION" "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" \
        "@google/gemini-cli@$GEMINI_CLI_VERSION" "@qwen-code/qwen-code@$QWEN_CODE_VERSION" \
        >/dev/null
    npm install --prefix "$node_prefix" --no-audit --no-fund --loglevel=error \
        "node-linux-$node_arch@$QWEN_NODE_VERSION" >/dev/null
    # Qwen Code on the pinned Node.js, whatever node comes first on PATH.
    cat >"$prefix/bin/qwen" <<'WRAPPER'
#!/bin/sh
here="$(cd "$(dirname "$0")" && pwd -P)"
exec "$here/../../node/node_modules/.bin/node" \
    "$here/../node_modules/@qwen-code/qwen-code/cli-entry.js" "$@"
WRAPPER
    chmod 755 "$prefix/bin/qwen"
    # Qwen Code's package ships its ripgrep without the execute bit (it then falls back
    # to a slower search and says so on screen).
    chmod 755 "$prefix"/node_modules/@qwen-code/qwen-code/vendor/ripgrep/*/rg
fi
