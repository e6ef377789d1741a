"""How long each provider takes to read a screen: `detect_status` and the last answer.

Runs every provider's pure functions on the screens recorded from the real CLIs
(`tests/fixtures/screens/<provider>/*.txt`) and on a long scrollback made of them, and
the Codex pane-log reader on a large log that grows between polls. Prints microseconds
per call; the server calls `detect_status` once per status poll of every terminal.

    .venv/bin/python bench/status_detection.py [--repeat 200]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from baton.providers import get_provider
from baton.providers.codex_signals import PaneStateReader

_FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "screens"


def _screens(provider: str) -> list[str]:
    screens = []
    for path in sorted((_FIXTURES / provider).glob("*.txt")):
        if "--history" in path.name or "--answer" in path.name:
            continue
        text = path.read_text(encoding="utf-8")
        if text.startswith("# status:"):
            text = text.split("\n", 1)[1]
        screens.append(text)
    return screens


def _per_call_us(action: Callable[[], object], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        action()
    return (time.perf_counter() - started) / calls * 1e6


def _bench_provider(name: str, repeat: int) -> None:
    screens = _screens(name)
    if not screens:
        print(f"{name:<12} no recorded screens in {_FIXTURES / name}")
        return
    provider = get_provider(name)

    def detect_all() -> None:
        for screen in screens:
            provider.detect_status(screen)

    per_screen = _per_call_us(detect_all, repeat) / len(screens)
    history = "\n".join(screens * 50)
    last = _per_call_us(lambda: provider.extract_last_message(history), max(1, repeat // 20))
    print(
        f"{name:<12} detect_status {per_screen:8.1f} µs/screen ({len(screens)} screens)"
        f"   extract_last_message {last / 1000:8.2f} ms on {history.count(chr(10)) + 1} lines"
    )


def _bench_pane_log(repeat: int) -> None:
    reader = PaneStateReader()
    with tempfile.TemporaryDirectory() as directory:
        log = Path(directory) / "pane.log"
        filler = b"\x1b[2K\x1b[1G\xe2\x80\xa2 Working (3s \xe2\x80\xa2 esc to interrupt)\r\n" * 1000
        with log.open("wb") as handle:
            for _ in range(400):  # ~20 MB of redraws
                handle.write(filler)
            handle.write(b"\x1b]7501;state=working:app=codex\x1b\\")
        first = _per_call_us(lambda: reader.state(log), 1)
        chunk = b"\x1b[2K partial answer text\r\n" * 20

        def grow_and_read() -> None:
            with log.open("ab") as handle:
                handle.write(chunk)
            reader.state(log)

        steady = _per_call_us(grow_and_read, repeat)
        size = log.stat().st_size / 1e6
    print(
        f"codex pane log ({size:.0f} MB): first read {first / 1000:.2f} ms, "
        f"then {steady:.1f} µs per poll (append {len(chunk)} bytes and read)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    for name in ("codex", "claude_code"):
        _bench_provider(name, args.repeat)
    _bench_pane_log(args.repeat)


if __name__ == "__main__":
    main()
