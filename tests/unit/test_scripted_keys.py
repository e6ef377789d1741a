"""The scripted agent's keyboard parser: pastes are one message, Enter submits."""

from __future__ import annotations

from baton.scripted_agent.keys import Event, KeyParser


def _feed_all(parser: KeyParser, *chunks: bytes) -> list[Event]:
    events: list[Event] = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    return events


def test_typing_then_enter() -> None:
    assert KeyParser().feed(b"hi\r") == [Event("text", "hi"), Event("submit")]


def test_bracketed_paste_keeps_newlines_and_enter_submits() -> None:
    events = KeyParser().feed(b"\x1b[200~line 1\rline 2\nline 3\x1b[201~\r")
    assert events == [Event("text", "line 1\nline 2\nline 3"), Event("submit")]


def test_paste_split_across_reads_and_inside_markers() -> None:
    text = 'über $HOME `x` "q"\n' * 50
    data = b"\x1b[200~" + text.encode() + b"\x1b[201~\r"
    chunks = [data[i : i + 7] for i in range(0, len(data), 7)]  # splits markers and UTF-8
    events = _feed_all(KeyParser(), *chunks)
    assert "".join(e.text for e in events if e.kind == "text") == text
    assert [e.kind for e in events][-1] == "submit"
    assert [e.kind for e in events].count("submit") == 1


def test_escape_sequences_are_dropped() -> None:
    events = KeyParser().feed(b"a\x1b[A\x1b[1;5Cb\x1bxc")
    assert "".join(e.text for e in events) == "abc"


def test_control_keys() -> None:
    kinds = [e.kind for e in KeyParser().feed(b"\x7f\x04\x03\x15")]
    assert kinds == ["backspace", "eof", "interrupt", "clear"]


def test_partial_paste_start_waits_for_more() -> None:
    parser = KeyParser()
    assert parser.feed(b"\x1b[20") == []
    assert parser.feed(b"0~x\x1b[201~") == [Event("text", "x")]


def test_a_lone_escape_is_the_esc_key_but_a_sequence_is_not() -> None:
    parser = KeyParser()
    assert parser.feed(b"\x1b") == []
    assert parser.take_lone_escape()
    assert not parser.take_lone_escape()  # taken once
    assert parser.feed(b"\x1b[A") == []  # an arrow key
    assert not parser.take_lone_escape()
