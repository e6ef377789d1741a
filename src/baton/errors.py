"""Every error Baton raises, in one tree, so callers catch exactly what they mean.

    BatonError                      base of everything below
    ├── ConfigError                 a bad env var, JSON config or prompt (names the key)
    ├── StateFileError              a state file that cannot be read, written or resumed
    ├── RunInterrupted              SIGINT/SIGTERM arrived; carries the signal number
    ├── ApiError                    talking to the CAO-compatible API failed
    │   ├── ApiUnreachableError     nothing answers at the API URL
    │   └── ApiHttpError            the server answered 4xx/5xx (status_code, detail)
    ├── HandoffError (RuntimeError) an agent did not hand over its answer
    │   ├── AgentErrorStatus        the terminal reported status `error`
    │   ├── AgentRestartsExhausted  an agent died again after AGENT_RESTARTS restarts
    │   ├── MissingResponseError    the agent finished without writing its response file
    │   └── HandoffTimeout (TimeoutError)  still working when RESPONSE_TIMEOUT ran out
    └── ServerError                 raised inside `baton serve`, mapped to HTTP codes
        ├── NotFoundError           unknown terminal or session (404)
        ├── BadRequestError         unknown profile or provider, bad parameter (400)
        ├── TerminalExitedError     the agent CLI has exited; input refused (409)
        ├── InputNotAcceptedError   the CLI did not take the input (the screen never changed)
        └── TmuxError               a tmux command failed

`baton.cli` turns each of them into one line on stderr and an exit code.
"""

from __future__ import annotations

__all__ = [
    "AgentErrorStatus",
    "AgentRestartsExhausted",
    "ApiError",
    "ApiHttpError",
    "ApiUnreachableError",
    "BadRequestError",
    "BatonError",
    "ConfigError",
    "HandoffError",
    "HandoffTimeout",
    "InputNotAcceptedError",
    "MissingResponseError",
    "NotFoundError",
    "RunInterrupted",
    "ServerError",
    "StateFileError",
    "TerminalExitedError",
    "TmuxError",
]


class BatonError(Exception):
    """Base class of every error Baton raises on purpose."""


class ConfigError(BatonError):
    """A configuration value, config file or prompt is unusable."""


class StateFileError(BatonError):
    """The state file cannot be read, written or resumed from."""


class RunInterrupted(BatonError):
    """The run was stopped by a signal; the exit code is 128 + signum."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by signal {signum}")
        self.signum = signum


class ApiError(BatonError):
    """A request to the CAO-compatible API failed."""


class ApiUnreachableError(ApiError):
    """Nothing answers at the API URL."""


class ApiHttpError(ApiError):
    """The server answered with an HTTP error status."""

    def __init__(self, method: str, url: str, status_code: int, detail: str) -> None:
        super().__init__(f"{method} {url} failed with HTTP {status_code}: {detail}")
        self.method = method
        self.url = url
        self.status_code = status_code
        self.detail = detail


class HandoffError(BatonError, RuntimeError):
    """An agent did not hand over its answer."""


class AgentErrorStatus(HandoffError):
    """The agent's terminal reported status `error`."""


class AgentRestartsExhausted(HandoffError):
    """An agent CLI died once more after AGENT_RESTARTS restarts in this run."""


class MissingResponseError(HandoffError):
    """The agent finished without writing its response file (strict mode)."""


class HandoffTimeout(HandoffError, TimeoutError):
    """The agent was still working when RESPONSE_TIMEOUT ran out."""


class ServerError(BatonError):
    """Raised inside `baton serve`; each subclass maps to one HTTP status."""

    status_code = 500


class NotFoundError(ServerError):
    """Unknown terminal or session."""

    status_code = 404


class BadRequestError(ServerError):
    """Unknown profile or provider, or a bad parameter."""

    status_code = 400


class TerminalExitedError(ServerError):
    """The agent CLI in this terminal has exited, so input is refused."""

    status_code = 409


class InputNotAcceptedError(ServerError):
    """The CLI did not take the input: its screen never changed."""

    status_code = 502


class TmuxError(ServerError):
    """A tmux command failed."""

    status_code = 500
