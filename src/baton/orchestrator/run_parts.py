"""What the parts of one run share, passed as two objects instead of nine parameters.

`RunContext` is what every part needs (its server, log, signals, state and record);
`TurnAids` are the optional helpers a turn may call on, each off when None.
"""

from __future__ import annotations

from dataclasses import dataclass

from baton.orchestrator.budget import Budget
from baton.orchestrator.client import ApiClient
from baton.orchestrator.events import RunEvents
from baton.orchestrator.interrupts import SignalGuard
from baton.orchestrator.restarts import AgentRestarter
from baton.orchestrator.runlog import RunLog
from baton.orchestrator.state import RunState
from baton.orchestrator.team import TeamStart
from baton.orchestrator.usage import TokenMeter

__all__ = ["RunContext", "TurnAids"]


@dataclass(frozen=True)
class RunContext:
    """One run's server, log, signal guard, state (mutated in place) and run record."""

    api: ApiClient
    log: RunLog
    signals: SignalGuard
    state: RunState
    events: RunEvents


@dataclass(frozen=True)
class TurnAids:
    """The optional helpers of the run's turns; None turns each off."""

    restarter: AgentRestarter | None = None  # None: a dead agent ends the run
    meter: TokenMeter | None = None  # None: no tokens are counted
    budget: Budget | None = None  # None: no MAX_TOKENS / MAX_COST_USD
    team: TeamStart | None = None  # a new team still creating its last terminals
