"""Budgets: stop a run between two turns once its agents used MAX_TOKENS or MAX_COST_USD.

Checked before each new prompt is sent, never in the middle of a turn, so the answer
the agents were working on is kept and the state stays RUNNING: raise the budget and
resume the run (`baton run` prints the command) to continue where it stopped.
"""

from __future__ import annotations

from dataclasses import dataclass

from baton.errors import BudgetExhausted
from baton.orchestrator.usage import Spent

__all__ = ["Budget"]


@dataclass(frozen=True)
class Budget:
    """The run's limits; None means no limit."""

    max_tokens: int | None = None
    max_cost_usd: float | None = None

    @property
    def limited(self) -> bool:
        return self.max_tokens is not None or self.max_cost_usd is not None

    def check(self, spent: Spent) -> None:
        """Raise `BudgetExhausted` naming the budget and the figure once one is reached."""
        if self.max_tokens is not None and spent.tokens >= self.max_tokens:
            raise BudgetExhausted(
                f"budget MAX_TOKENS={self.max_tokens} reached: the agents used "
                f"{spent.tokens} tokens; raise it and resume the run to continue",
                budget="MAX_TOKENS",
                limit=self.max_tokens,
                spent=spent.tokens,
            )
        if self.max_cost_usd is not None and spent.cost_usd >= self.max_cost_usd:
            raise BudgetExhausted(
                f"budget MAX_COST_USD={self.max_cost_usd:g} reached: the agents used "
                f"${spent.cost_usd:.4f}; raise it and resume the run to continue",
                budget="MAX_COST_USD",
                limit=self.max_cost_usd,
                spent=round(spent.cost_usd, 6),
            )
