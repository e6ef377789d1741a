#!/usr/bin/env bash
# Install what Baton needs on a Debian machine: tmux, a Python 3.11+ virtualenv in .venv,
# the locked dependencies and dev tools (requirements.lock), and Baton itself (editable).
# Safe to run again; it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_install() {
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "bootstrap: please install $* with your package manager" >&2
        exit 1
    fi
    if [ -z "${BATON_APT_UPDATED:-}" ]; then
        as_root apt-get update -qq
        export BATON_APT_UPDATED=1
    fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

command -v tmux >/dev/null 2>&1 || apt_install tmux
command -v git >/dev/null 2>&1 || apt_install git

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "bootstrap: Baton needs Python 3.11 or newer ($PYTHON is older or missing)" >&2
    exit 1
fi
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv 2>/dev/null || {
        apt_install python3-venv
        rm -rf .venv
        "$PYTHON" -m venv .venv
    }
fi
# Every dependency at the version requirements.lock pins (scripts/lock.sh writes it from
# pyproject.toml), then Baton itself, editable, without resolving anything again.
stamp=.venv/.baton-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ requirements.lock -nt "$stamp" ]; then
    .venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
    .venv/bin/python -m pip install -q -r requirements.lock
    .venv/bin/python -m pip install -q --no-deps -e .
    touch "$stamp"
fi
# Byte-compile Baton's own sources: an editable install is not compiled by pip, and with
# PYTHONDONTWRITEBYTECODE set every `baton run` and agent would compile them at each start
# (~90 ms of CPU per `baton run`). Stale files are recompiled in memory, so this is safe.
.venv/bin/python -m compileall -q src >/dev/null || true
