#!/usr/bin/env bash
# Put `baton` on the user's PATH: a link ~/.local/bin/baton -> this checkout's .venv/bin/baton.
# An existing ~/.local/bin/baton that is not such a link is left alone. Says exactly what to
# run when ~/.local/bin is not on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
target="$(pwd)/.venv/bin/baton"
bindir="$HOME/.local/bin"
link="$bindir/baton"
if [ ! -x "$target" ]; then
    echo "launcher: $target is missing; run: bash scripts/bootstrap.sh" >&2
    exit 1
fi
if [ -e "$link" ] && [ ! -L "$link" ]; then
    echo "launcher: $link exists and is not a link; left alone. Run Baton as: $target" >&2
    exit 0
fi
if [ -L "$link" ]; then
    current="$(readlink "$link")"
    case "$current" in
        */.venv/bin/baton) ;;  # an earlier Baton checkout's link: point it here
        *)
            echo "launcher: $link points to $current; left alone. Run Baton as: $target" >&2
            exit 0
            ;;
    esac
fi
mkdir -p "$bindir"
ln -sfn "$target" "$link"
case ":${PATH}:" in
    *":$bindir:"*)
        echo "launcher: $link -> $target; \`baton\` works in any shell" >&2
        ;;
    *)
        echo "launcher: $link -> $target, but $bindir is not on your PATH." >&2
        echo "launcher: add this line to ~/.bashrc (or your shell's profile), then open a new shell:" >&2
        echo "    export PATH=\"\$HOME/.local/bin:\$PATH\"" >&2
        echo "launcher: until then, run Baton as: $link" >&2
        ;;
esac
