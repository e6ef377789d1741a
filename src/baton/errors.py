"""Every error Baton raises, in one tree, so callers catch exactly what they mean.

    BatonError                      base of everything below
    ├── ConfigError                 a bad env var, JSON config or prompt (names the key)
    │   └── PromptError             a prompt without its two sections (carries an example)
    ├── StateFileError              a state file that cannot be read, written or resumed
    │   └── RunLockedError          another `baton run` is driving that state file now
    ├── BudgetExhausted             MAX_TOKENS or MAX_COST_USD reached; the run is resumable
    ├── GitCommitError              POST_GIT_COMMIT could not commit the change
    ├── LeaseError                  a feature's lease in a batch's shared store
    │   ├── LeaseBusy               another host holds it and it has not expired
    │   └── LeaseLost               a newer epoch took it: this holder must stop writing
    ├── ApiError                    talking to the CAO-compatible API failed
    │   ├── ApiUnreachableError     nothing answers at the API URL
    │   ├── ApiOutcomeUnknown       a write whose answer was lost: it may or may not be done
    │   └── ApiHttpError            the server answered 4xx/5xx (status_code, detail)
    ├── HandoffError (RuntimeError) an agent did not hand over its answer
    │   ├── AgentErrorStatus        the terminal reported status `error`
    │   ├── AgentRestartsExhausted  an agent died again after AGENT_RESTARTS restarts
    │   ├── MissingResponseError    the agent finished without writing its response file
    │   ├── AgentStalled            working, but no progress for STALL_SECONDS
    │   └── HandoffTimeout (TimeoutError)  still working when RESPONSE_TIMEOUT ran out
    ├── CockpitError                `baton watch/report/answer/attach` cannot do what was asked
    │   ├── ReportError             the report page cannot be written
    │   └── AttachError             no tmux window to attach to (remote or foreign server)
    └── ServerError                 raised inside `baton serve`, mapped to HTTP codes
        ├── NotFoundError           unknown terminal or session (404)
        ├── BadRequestError         unknown profile or provider, bad parameter (400)
        ├── TerminalExitedError     the agent CLI has exited; input refused (409)
        ├── TerminalBusyError       the CLI is busy and the caller asked not to queue (409)
        ├── NotWaitingError         the web cockpit's answer to an agent not waiting (409)
        ├── InputQueueTimeoutError  still busy when a queued message's wait ran out (504)
        ├── InputNotAcceptedError   the CLI did not take the input as a new turn (502)
        ├── StepFailedError         a run-step worker crashed (502) or ran out of time (504)
        ├── EmptyMessageError       a message with nothing to submit (422)
        ├── MessageTooLargeError    a message over the server's size limit (413)
        ├── ForbiddenError          a terminal's own token used beyond that terminal (403)
        ├── StorageFullError        the state directory's disk is full or failing (507)
        └── TmuxError               a tmux command failed

    RunInterrupted (BaseException)  SIGINT/SIGTERM arrived; carries the signal number

`RunInterrupted` is raised by a signal handler wherever the run happens to be, so, like
`KeyboardInterrupt`, it stands outside `BatonError` and `Exception`: a handler meant for
an error (a status record that cannot be written, a notification that fails) never
swallows a stop. `baton.cli` turns each of them into one line on stderr and an exit code.
"""

from __future__ import annotations

__all__ = [
    "AgentErrorStatus",
    "AgentRestartsExhausted",
    "AgentStalled",
    "ApiError",
    "ApiHttpError",
    "ApiOutcomeUnknown",
    "ApiUnreachableError",
    "AttachError",
    "BadRequestError",
    "BatonError",
    "BudgetExhausted",
    "CockpitError",
    "ConfigError",
    "EmptyMessageError",
    "ForbiddenError",
    "GitCommitError",
    "HandoffError",
    "HandoffTimeout",
    "InputNotAcceptedError",
    "InputQueueTimeoutError",
    "LeaseBusy",
    "LeaseError",
    "LeaseLost",
    "MessageTooLargeError",
    "MissingResponseError",
    "NotFoundError",
    "NotWaitingError",
    "PromptError",
    "ReportError",
    "RunInterrupted",
    "RunLockedError",
    "ServerError",
    "StateFileError",
    "StepFailedError",
    "StorageFullError",
    "TerminalBusyError",
    "TerminalExitedError",
    "TmuxError",
]


class BatonError(Exception):
    """Base class of every error Baton raises on purpose."""


class ConfigError(BatonError):
    """A configuration value, config file or prompt is unusable."""


class PromptError(ConfigError):
    """The run's prompt is missing or lacks a section; `example` shows what is expected."""

    def __init__(self, message: str, example: str) -> None:
        super().__init__(message)
        self.example = example


class StateFileError(BatonError):
    """The state file cannot be read, written or resumed from."""


class RunLockedError(StateFileError):
    """Another live `baton run` holds the state file's driver lock; this one must not drive."""


class BudgetExhausted(BatonError):
    """A budget (`budget`: MAX_TOKENS or MAX_COST_USD) was reached between two turns.

    The state stays RUNNING: raising the budget and running again continues the run.
    """

    def __init__(self, message: str, *, budget: str, limit: float, spent: float) -> None:
        super().__init__(message)
        self.budget = budget
        self.limit = limit
        self.spent = spent


class GitCommitError(BatonError):
    """The commit after a PASS (POST_GIT_COMMIT) could not be made."""


class LeaseError(BatonError):
    """A feature's lease (`baton.batch.lease`) cannot be taken or is no longer held."""


class LeaseBusy(LeaseError):
    """Another host holds the feature's lease and it has not expired."""


class LeaseLost(LeaseError):
    """A newer epoch took the lease (or it expired unrenewed): stop, write nothing more."""


class RunInterrupted(BaseException):
    """The run was stopped by a signal; the exit code is 128 + signum.

    Not a `BatonError`: it can surface inside any `except Exception` of the run.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by signal {signum}")
        self.signum = signum


class ApiError(BatonError):
    """A request to the CAO-compatible API failed."""


class ApiUnreachableError(ApiError):
    """Nothing answers at the API URL."""


class ApiOutcomeUnknown(ApiError):
    """A write (create, input) whose answer was lost: the server may have done it.

    Raised instead of sending it again blindly; the caller checks what happened.
    """


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


class AgentStalled(HandoffError):
    """The agent kept working without progress for STALL_SECONDS (a stalled model stream).

    `quiet_seconds` says how long nothing changed; the turn runner interrupts the turn,
    then restarts the CLI (`baton.orchestrator.stall_recovery`).
    """

    def __init__(self, message: str, *, quiet_seconds: float = 0.0) -> None:
        super().__init__(message)
        self.quiet_seconds = quiet_seconds


class HandoffTimeout(HandoffError, TimeoutError):
    """The agent was still working when RESPONSE_TIMEOUT ran out."""


class CockpitError(BatonError):
    """An operator command (watch, report, answer, attach) cannot do what was asked."""


class ReportError(CockpitError):
    """The report page cannot be written."""


class AttachError(CockpitError):
    """There is no local tmux window to attach to (a remote or non-Baton server)."""


class ServerError(BatonError):
    """Raised inside `baton serve`; each subclass maps to one HTTP status."""

    status_code = 500

    def detail(self) -> str | dict[str, str | None]:
        """What the API puts in the response's `detail`: one line, unless a client needs more."""
        return str(self)


class NotFoundError(ServerError):
    """Unknown terminal or session."""

    status_code = 404


class BadRequestError(ServerError):
    """Unknown profile or provider, or a bad parameter."""

    status_code = 400


class TerminalExitedError(ServerError):
    """The agent CLI in this terminal has exited, so input is refused."""

    status_code = 409


class TerminalBusyError(ServerError):
    """The CLI is busy (or other input is queued before) and the caller asked not to queue."""

    status_code = 409


class NotWaitingError(ServerError):
    """The web cockpit was asked to answer an agent that is not waiting for an answer."""

    status_code = 409


class InputQueueTimeoutError(ServerError):
    """A queued message waited its whole time for the CLI to rest; it was never typed."""

    status_code = 504


class InputNotAcceptedError(ServerError):
    """The CLI did not take the input: no new turn started (or the screen never changed)."""

    status_code = 502


class StepFailedError(ServerError):
    """A `run-step` worker crashed (`kind` "error", 502) or ran out of time ("timeout", 504).

    CAO's clients read the failure as a structured detail `{message, kind, terminal_id}`,
    so the terminal left behind can be inspected or deleted without parsing text.
    """

    def __init__(self, message: str, *, kind: str, terminal_id: str | None) -> None:
        super().__init__(message)
        self.kind = kind
        self.terminal_id = terminal_id
        self.status_code = 504 if kind == "timeout" else 502

    def detail(self) -> str | dict[str, str | None]:
        return {"message": str(self), "kind": self.kind, "terminal_id": self.terminal_id}


class EmptyMessageError(ServerError):
    """The message is empty or only whitespace: there is nothing to submit."""

    status_code = 422


class MessageTooLargeError(ServerError):
    """The message is larger than the server's limit (`--max-message-bytes`)."""

    status_code = 413


class ForbiddenError(ServerError):
    """A terminal's own token asked for something that terminal may not do."""

    status_code = 403


class StorageFullError(ServerError):
    """The server cannot write its state: the disk under the state directory is full or failing."""

    status_code = 507


class TmuxError(ServerError):
    """A tmux command failed."""

    status_code = 500
