"""The report's timeline: one lane per agent, one bar per turn, laid out in SVG units.

Only numbers and plain labels are computed here; the template draws them, so every label
(some come from the run) goes through the template's escaping.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from baton.cockpit.record import RunRecord, Turn
from baton.orchestrator.runlog import format_duration
from baton.roles import ROLES

__all__ = ["Bar", "Timeline", "layout_timeline"]

WIDTH = 1000
LABEL_WIDTH = 130
LANE_HEIGHT = 34
TOP = 28
BAR_HEIGHT = 20
COLOURS = {
    "analyst": "#4e79a7",
    "analyst_review": "#76b7b2",
    "programmer": "#59a14f",
    "programmer_review": "#8cd17d",
    "tester": "#b07aa1",
}


@dataclass(frozen=True)
class Mark:
    """A span or point on a bar: a wait for an answer, a reminder."""

    x: float
    width: float
    title: str


@dataclass(frozen=True)
class Bar:
    """One turn drawn as a rectangle in its agent's lane."""

    x: float
    y: float
    width: float
    colour: str
    title: str
    open: bool  # still waiting for the answer
    waits: list[Mark] = field(default_factory=list)
    reminders: list[Mark] = field(default_factory=list)


@dataclass(frozen=True)
class Timeline:
    """Everything the template needs to draw the chart."""

    width: int
    height: int
    label_width: int
    lane_height: int
    bar_height: int
    lanes: list[tuple[float, str]]  # (y, label)
    bars: list[Bar]
    rounds: list[tuple[float, str]]  # (x, label) where each round's first prompt went out
    ticks: list[tuple[float, str]]  # (x, elapsed label)
    span_label: str

    @property
    def empty(self) -> bool:
        return not self.bars


def layout_timeline(record: RunRecord, now: datetime | None = None) -> Timeline:
    """Place every turn of the run on a shared time axis from its first to its last event."""
    turns = record.turns
    lanes = [(float(TOP + index * LANE_HEIGHT), role.title) for index, role in enumerate(ROLES)]
    height = TOP + len(ROLES) * LANE_HEIGHT + 10
    if not turns:
        return Timeline(
            WIDTH, height, LABEL_WIDTH, LANE_HEIGHT, BAR_HEIGHT, lanes, [], [], [], "no turns"
        )
    start = min(turn.sent_at for turn in turns)
    ends = [turn.answered_at or now or record.last_event_at or turn.sent_at for turn in turns]
    if record.last_event_at is not None:
        ends.append(record.last_event_at)
    end = max([*ends, start])
    span = max((end - start).total_seconds(), 1.0)
    scale = (WIDTH - LABEL_WIDTH - 10) / span

    def x_of(moment: datetime) -> float:
        return LABEL_WIDTH + max(0.0, (moment - start).total_seconds()) * scale

    lane_of = {role.output_key: index for index, role in enumerate(ROLES)}
    bars = [_bar(turn, lane_of[turn.role.output_key], x_of, end) for turn in turns]
    rounds: list[tuple[float, str]] = []
    for turn in turns:
        if not rounds or rounds[-1][1] != f"round {turn.round}":
            rounds.append((x_of(turn.sent_at), f"round {turn.round}"))
    ticks = [
        (LABEL_WIDTH + fraction * (WIDTH - LABEL_WIDTH - 10), format_duration(span * fraction))
        for fraction in (0.0, 0.25, 0.5, 0.75, 1.0)
    ]
    return Timeline(
        WIDTH,
        height,
        LABEL_WIDTH,
        LANE_HEIGHT,
        BAR_HEIGHT,
        lanes,
        bars,
        rounds,
        ticks,
        format_duration(span),
    )


def _bar(turn: Turn, lane: int, place: Callable[[datetime], float], end: datetime) -> Bar:
    finished = turn.answered_at or end
    x = place(turn.sent_at)
    width = max(place(finished) - x, 2.0)
    state = (
        f"answered after {format_duration(turn.seconds(end))}"
        if turn.answered_at
        else f"working for {format_duration(turn.seconds(end))} (no answer yet)"
    )
    sizes = f"prompt {turn.prompt_chars or 0} chars, answer {turn.answer_chars or 0} chars"
    title = (
        f"{turn.role.title} · round {turn.round} · {turn.phase} cycle {turn.cycle}: "
        f"{state}; {sizes}"
    )
    waits = []
    for began, stopped in turn.waits:
        wait_end = stopped or finished
        seconds = max((wait_end - began).total_seconds(), 0.0)
        wx = place(began)
        waits.append(
            Mark(
                wx,
                max(place(wait_end) - wx, 2.0),
                f"waited {format_duration(seconds)} for a user answer",
            )
        )
    reminders = [Mark(place(moment), 0.0, "reminder sent") for moment in turn.reminders]
    y = TOP + lane * LANE_HEIGHT + (LANE_HEIGHT - BAR_HEIGHT) / 2
    return Bar(
        x=x,
        y=y,
        width=width,
        colour=COLOURS.get(turn.role.output_key, "#888"),
        title=title,
        open=turn.answered_at is None,
        waits=waits,
        reminders=reminders,
    )
