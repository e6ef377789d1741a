#!/usr/bin/env bash
# Install Node.js (if missing) and the pinned agent CLIs into .tools/agents, for the
# end-to-end tests. Nothing is installed globally except Debian's nodejs/npm.
set -euo pipefail
cd "$(dirname "$0")/.."

CODEX_VERSION=0.169.0
CLAUDE_CODE_VERSION=2.1.328
GEMINI_CLI_VERSION=0.61.0
QWEN_CODE_VERSION=0.24.4
COPILOT_VERSION=1.0.102
OPENCODE_VERSION=1.18.33
# Qwen Code needs Node.js 22 or newer. The pinned Node.js from the npm registry
# (node-linux-<arch>) is installed into .tools/node and runs Qwen Code alone, through
# .tools/agents/bin/qwen; the other CLIs keep the machine's node.
QWEN_NODE_VERSION=22.23.3
prefix=.tools/agents
node_prefix=.tools/node
# Copilot CLI is a native binary (the npm package's @github/copilot-<platform>) that
# unpacks its JavaScript (~235 MB) on first launch. .tools/agents/bin/copilot runs it
# with that cache in .tools/copilot-cache, unpacked here once, so every test shares it
# and nothing is unpacked (or fetched) when the tests run.
copilot_cache=.tools/copilot-cache

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

# The script's own Copilot calls use .tools/copilot-cache, whatever the caller's setting.
export COPILOT_PKG_CACHE_HOME="$PWD/$copilot_cache"
want="codex-cli $CODEX_VERSION|$CLAUDE_CODE_VERSION (Claude Code)|$GEMINI_CLI_VERSION|v$QWEN_NODE_VERSION $QWEN_CODE_VERSION|Copilot binary version: $COPILOT_VERSION unpacked|$OPENCODE_VERSION"
have="$("$prefix/node_modules/.bin/codex" --version 2>/dev/null || true)|$("$prefix/node_modules/.bin/claude" --version 2>/dev/null || true)|$(GEMINI_CLI_NO_RELAUNCH=true "$prefix/node_modules/.bin/gemini" --version 2>/dev/null || true)|$("$node_prefix/node_modules/.bin/node" --version 2>/dev/null || true) $("$prefix/bin/qwen" --version 2>/dev/null || true)|$("$prefix/bin/copilot" --binary-version 2>/dev/null || true)$([ -e "$copilot_cache/pkg/linux-$node_arch/$COPILOT_VERSION/.extraction-complete" ] && echo " unpacked" || true)|$("$prefix/node_modules/.bin/opencode" --version 2>/dev/null || true)"
if [ "$have" != "$want" ]; then
    mkdir -p "$prefix/bin" "$node_prefix"
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
        "@openai/codex@$CODEX_VERSION" "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" \
        "@google/gemini-cli@$GEMINI_CLI_VERSION" "@qwen-code/qwen-code@$QWEN_CODE_VERSION" \
        "@github/copilot@$COPILOT_VERSION" "opencode-ai@$OPENCODE_VERSION" >/dev/null
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
    # Copilot CLI's native binary, with its unpacked package in .tools/copilot-cache
    # (COPILOT_PKG_CACHE_HOME; a user's own setting wins).
    cat >"$prefix/bin/copilot" <<'WRAPPER'
#!/bin/sh
here="$(cd "$(dirname "$0")" && pwd -P)"
: "${COPILOT_PKG_CACHE_HOME:=$here/../../copilot-cache}"
export COPILOT_PKG_CACHE_HOME
exec "$here/../node_modules/@github/copilot-linux-@ARCH@/copilot" "$@"
WRAPPER
    sed -i "s/@ARCH@/$node_arch/" "$prefix/bin/copilot"
    chmod 755 "$prefix/bin/copilot"
    # Unpack its package now (what its first launch would do) and nothing else.
    mkdir -p "$copilot_cache"
    COPILOT_SEA_EXTRACT_ONLY=1 "$prefix/bin/copilot" --binary-version >/dev/null
fi

# OpenCode installs its plugin SDK (@opencode-ai/plugin, about 64 MB) into a config
# directory the first time a plugin is configured there: seconds of npm at the CLI's
# first launch. The tests' throw-away OpenCode homes link this copy instead
# (tests/e2e/model/opencode_home.py), so no test pays for that install.
opencode_deps=.tools/opencode-plugin-deps
if [ "$(cat "$opencode_deps/.version" 2>/dev/null || true)" != "$OPENCODE_VERSION" ]; then
    rm -rf "$opencode_deps"
    mkdir -p "$opencode_deps"
    npm install --prefix "$opencode_deps" --save-exact --no-audit --no-fund --loglevel=error \
        "@opencode-ai/plugin@$OPENCODE_VERSION" >/dev/null
    echo "$OPENCODE_VERSION" >"$opencode_deps/.version"
fi
