"""Token usage as both halves speak of it: one terminal's cumulative counts and model.

The server reads each CLI's own record (Codex's rollout `token_count`, Claude Code's
transcript `usage`, the scripted agent's usage file) and reports it through
`GET /terminals/{id}/usage`; the orchestrator turns successive readings into per-turn
deltas and cost. `input_tokens` counts every prompt token, cached ones included;
`cached_input_tokens` is the part served from the provider's prompt cache. `cost_usd` is
what the CLI itself says the tokens cost, for a CLI that prices them (OpenCode); None
leaves the pricing to the orchestrator's price table. `complete` says whether the record
shows the CLI's last turn finished (Claude Code's transcript ends with its closing
message), so a reading is known to be whole without waiting for it to hold still; None
where the record cannot tell.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

__all__ = ["Usage"]


@dataclass(frozen=True)
class Usage:
    """Cumulative tokens of one terminal's agent, and the model that spent them."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    model: str | None = None
    cost_usd: float | None = None
    complete: bool | None = None

    @property
    def total_tokens(self) -> int:
        """Prompt plus output tokens: what `MAX_TOKENS` counts."""
        return self.input_tokens + self.output_tokens

    def to_json(self) -> dict[str, int | float | str | bool | None]:
        return {
            "input_tokens": self.input_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "output_tokens": self.output_tokens,
            "model": self.model,
            "cost_usd": self.cost_usd,
            "complete": self.complete,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Usage | None:
        """A reading from JSON; None when a count is missing or not a whole number >= 0."""
        counts: dict[str, int] = {}
        for name in ("input_tokens", "cached_input_tokens", "output_tokens"):
            value = data.get(name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                return None
            counts[name] = value
        model = data.get("model")
        cost = data.get("cost_usd")
        complete = data.get("complete")
        return cls(
            **counts,
            model=model if isinstance(model, str) and model else None,
            cost_usd=_dollars(cost),
            complete=complete if isinstance(complete, bool) else None,
        )

    def minus(self, earlier: Usage) -> Usage:
        """What was spent since `earlier`; a counter that went back (a restarted CLI) counts
        from zero. A difference says nothing of a turn's end (`complete` None)."""
        if (
            self.input_tokens < earlier.input_tokens
            or self.output_tokens < earlier.output_tokens
            or self.cached_input_tokens < earlier.cached_input_tokens
        ):
            return replace(self, complete=None)
        cost = self.cost_usd
        if cost is not None and earlier.cost_usd is not None:
            cost = max(cost - earlier.cost_usd, 0.0)
        return Usage(
            self.input_tokens - earlier.input_tokens,
            self.cached_input_tokens - earlier.cached_input_tokens,
            self.output_tokens - earlier.output_tokens,
            self.model or earlier.model,
            cost,
        )


def _dollars(value: object) -> float | None:
    """A cost read from JSON: a number >= 0, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return float(value)
