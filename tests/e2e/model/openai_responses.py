"""A scripted OpenAI Responses API server, so the real Codex CLI runs offline.

Codex 0.169 sends `POST /v1/responses` (a streamed request: the whole conversation as
`input` items, the tools it offers as `tools`) and reads server-sent events back. This
server plays the model: it finds the prompt the user typed last, counts the tool results
that came back since, and asks `Brain.next_step` what to do — one shell command (a
`function_call` item for Codex's shell tool) or the final assistant `message`.

Codex also asks the model for a short thread title in a separate request (no tools, a
JSON-schema `text.format`); those get a fixed title and never reach the brain, so they
neither open turns in its timeline nor look like a second prompt.

Misbehaviours (per role, decided by the brain): SLOW waits before replying, HTTP_500
answers with a JSON error, CUT_STREAM sends `response.created` and drops the connection,
STALL accepts a turn's first request and sends nothing (`StalledStream`).
`codex_environment` writes a throw-away `CODEX_HOME` pointing Codex at this server.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send
from tests.e2e.clis import AGENT_BIN_DIR
from tests.e2e.model.brain import Brain, Misbehaviour
from tests.e2e.model.serving import StalledStream, running_app
from tests.e2e.model.step import Step, offered_name

__all__ = [
    "API_KEY_VARIABLE",
    "MODEL_NAME",
    "PROVIDER_ID",
    "ModelServer",
    "codex_environment",
    "latest_prompt",
    "openai_model_server",
    "write_codex_home",
]

PROVIDER_ID = "baton_scripted"
API_KEY_VARIABLE = "BATON_SCRIPTED_OPENAI_KEY"
MODEL_NAME = "gpt-5.1-codex"
TITLE = "Scripted task"

# User-role messages Codex writes itself (context, not something the user typed).
_INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<permissions instructions>",
    "<skills_instructions>",
    "<collaboration_mode>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
)
_SHELL_TOOLS = ("exec_command", "shell_command", "shell", "bash")
# How OpenCode's title agent's instructions start (its side request for a session title).
_TITLE_AGENT = "You are a title generator"


@dataclass
class ModelServer:
    """A running scripted model: where it listens, who decides, what it received."""

    base_url: str
    brain: Brain
    requests: list[dict[str, Any]] = field(default_factory=list)
    # Seconds between streamed chunks of the final message (0: all at once).
    stream_delay: float = 0.0
    # The HTTP status of the HTTP_500 misbehaviour's error: 500, or a 4xx for a CLI that
    # retries every 5xx (OpenCode waits and asks again, without end).
    error_status: int = 500
    # Ask Codex to run every command outside its sandbox, which needs the user's
    # approval under `--ask-for-approval on-request` (records an approval dialog).
    escalate_commands: bool = False
    # The shell tool a command is sent to when the request offers none of them (an agent
    # whose CLI was told to withhold its shell is still asked to run the command).
    shell_tool: str = "exec_command"
    # The `usage` of every completed response, oldest first, with whether it answered a
    # thread-title side request (`"title"`) or the conversation (`"turn"`).
    usage_sent: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def conversation_usage(self) -> dict[str, int]:
        """What the conversation's responses reported, summed as Codex totals them."""
        turns = [usage for kind, usage in self.usage_sent if kind == "turn"]
        return {
            "input_tokens": sum(u["input_tokens"] for u in turns),
            "cached_input_tokens": sum(u["input_tokens_details"]["cached_tokens"] for u in turns),
            "output_tokens": sum(u["output_tokens"] for u in turns),
        }

    def turn_requests(self) -> list[dict[str, Any]]:
        """The requests of the agent loop: they offer tools; title side requests offer none."""
        return [body for body in list(self.requests) if body.get("tools")]

    @property
    def api_base(self) -> str:
        """The `base_url` Codex needs (the API root, `/v1` included)."""
        return f"{self.base_url}/v1"


@dataclass(frozen=True)
class _Turn:
    """What one request asks: the user's latest prompt and the tool results since."""

    prompt: str
    done_steps: int
    last_tool_output: str


def latest_prompt(items: Sequence[Mapping[str, Any]]) -> _Turn | None:
    """The last user-typed message in `input` and the `function_call_output`s after it."""
    start = None
    for index, item in enumerate(items):
        if item.get("type", "message") == "message" and item.get("role") == "user":
            text = _text_of(item)
            if text and not text.lstrip().startswith(_INJECTED_PREFIXES):
                start = index
    if start is None:
        return None
    outputs = [i for i in items[start + 1 :] if i.get("type") == "function_call_output"]
    last = _output_text(outputs[-1].get("output")) if outputs else ""
    return _Turn(_text_of(items[start]), len(outputs), last)


def _instructions_of(body: Mapping[str, Any]) -> str:
    """The system and developer text of a request: `instructions` and those messages."""
    parts = [str(body.get("instructions") or "")]
    for item in body.get("input") or []:
        if item.get("type", "message") == "message" and item.get("role") in (
            "developer",
            "system",
        ):
            parts.append(_text_of(item))
    return "\n".join(parts)


def _find_tool(tools: Sequence[Mapping[str, Any]], wanted: str) -> tuple[str, str] | None:
    """(namespace or "", name) of the offered function called `wanted`, or an MCP tool's
    name for it (`mcp__cao__wanted`, `cao_wanted`: `offered_name`)."""
    for tool in tools:
        name = str(tool.get("name") or "")
        if tool.get("type") == "namespace":
            inner = _find_tool(tool.get("tools") or [], wanted)
            if inner is not None:
                return name, inner[1]
        elif offered_name([name], wanted) is not None:
            return "", name
    return None


def _text_of(item: Mapping[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = [part.get("text", "") for part in content or [] if isinstance(part, Mapping)]
    return "\n".join(part for part in parts if part)


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(str(part.get("text", "")) for part in output if isinstance(part, dict))
    if isinstance(output, dict):
        return str(output.get("content", output))
    return ""


def _is_title_request(body: Mapping[str, Any], headers: Mapping[str, str]) -> bool:
    """A side request for a thread title: Codex's (structured output, no tools) or
    OpenCode's (no tools, its title generator's instructions)."""
    text_format = (body.get("text") or {}).get("format") or {}
    if text_format.get("type") == "json_schema" and not body.get("tools"):
        return True
    if not body.get("tools") and _instructions_of(body).lstrip().startswith(_TITLE_AGENT):
        return True
    try:
        metadata = json.loads(headers.get("x-codex-turn-metadata", "{}"))
    except ValueError:
        return False
    return metadata.get("thread_source") == "thread_title"


def _sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


class _Responder:
    """Turns brain decisions into Responses API event streams."""

    def __init__(self, server: ModelServer) -> None:
        self.server = server
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}_{next(self._ids)}"

    async def responses(self, request: Request) -> Response:
        raw = await request.body()
        body = json.loads(raw or b"{}")
        self.server.requests.append(body)
        usage = _usage_for(raw)
        if _is_title_request(body, request.headers):
            item = self._message_item(json.dumps({"title": TITLE}))
            return self._stream([item], usage=usage, kind="title")
        turn = latest_prompt(body.get("input") or [])
        if turn is None:
            return self._stream([self._message_item("READY.")], usage=usage)
        brain = self.server.brain
        if turn.done_steps == 0:
            brain.turn_opened(turn.prompt)
        if brain.takes_stall(turn.prompt, turn.done_steps):
            return StalledStream()
        behaviour = brain.misbehaviour_for(turn.prompt)
        delay = brain.delay_for(turn.prompt)
        if delay:
            await asyncio.sleep(delay)
        if behaviour is Misbehaviour.HTTP_500:
            brain.turn_closed(turn.prompt)
            error = {"message": "scripted model failure", "type": "server_error", "code": None}
            if self.server.error_status < 500:
                error["type"] = "invalid_request_error"
            return JSONResponse({"error": error}, status_code=self.server.error_status)
        if behaviour is Misbehaviour.CUT_STREAM:
            return _CutStream(self._created(), lambda: brain.turn_closed(turn.prompt))
        step = brain.next_step(
            turn.prompt, turn.done_steps, turn.last_tool_output, _instructions_of(body)
        )
        if step.is_final:
            item = self._message_item(step.message or "")
            return self._stream(
                [item], stream_text=True, on_done=lambda: _close(brain, turn), usage=usage
            )
        return self._stream([self._tool_item(step, body.get("tools") or [])], usage=usage)

    # -- items and streams ------------------------------------------------------------------

    def _created(self) -> bytes:
        response = {"id": self._next_id("resp"), "object": "response", "status": "in_progress"}
        return _sse({"type": "response.created", "response": response})

    def _message_item(self, text: str) -> dict[str, Any]:
        return {
            "type": "message",
            "id": self._next_id("msg"),
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }

    def _tool_item(self, step: Step, tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        if step.tool is not None:
            return self._named_tool_item(step, tools)
        offered = {tool.get("name") for tool in tools}
        name = next((n for n in _SHELL_TOOLS if n in offered), self.server.shell_tool)
        command = step.command or ""
        # The longest wait Codex allows before it hands back a still-running command.
        arguments: dict[str, Any] = {"cmd": command, "yield_time_ms": 30000}
        if self.server.escalate_commands:
            arguments["sandbox_permissions"] = "require_escalated"
            arguments["justification"] = "Write the response file"
        if name == "shell":
            arguments = {"command": ["bash", "-lc", command]}
        elif name == "shell_command":
            arguments = {"command": command}
        elif name == "bash":  # OpenCode's shell tool
            first_line = command.strip().splitlines()[0] if command.strip() else "command"
            arguments = {"command": command, "description": first_line[:60]}
        return {
            "type": "function_call",
            "id": self._next_id("fc"),
            "call_id": self._next_id("call"),
            "name": name,
            "arguments": json.dumps(arguments),
            "status": "completed",
        }

    def _named_tool_item(self, step: Step, tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """A call to the offered tool named `step.tool` (an MCP tool is offered as
        `mcp__<server>__<tool>`, possibly inside a namespace); a plain message saying the
        tool is missing when the CLI offers none by that name."""
        found = _find_tool(tools, step.tool or "")
        if found is None:
            return self._message_item(f"The {step.tool} tool is not available to me.")
        namespace, name = found
        item: dict[str, Any] = {
            "type": "function_call",
            "id": self._next_id("fc"),
            "call_id": self._next_id("call"),
            "name": name,
            "arguments": json.dumps(dict(step.arguments or {})),
            "status": "completed",
        }
        if namespace:
            item["namespace"] = namespace
        return item

    def _stream(
        self,
        items: list[dict[str, Any]],
        *,
        stream_text: bool = False,
        on_done: Any = None,
        usage: dict[str, Any],
        kind: str = "turn",
    ) -> StreamingResponse:
        created = self._created()
        delay = self.server.stream_delay

        async def events() -> AsyncIterator[bytes]:
            yield created
            for index, item in enumerate(items):
                opening = {**item, "status": "in_progress"}
                if item["type"] == "message":
                    opening["content"] = []
                yield _sse(
                    {"type": "response.output_item.added", "output_index": index, "item": opening}
                )
                if stream_text and item["type"] == "message":
                    async for chunk in _text_deltas(item, index, delay):
                        yield chunk
                yield _sse(
                    {"type": "response.output_item.done", "output_index": index, "item": item}
                )
            sent = {**usage, "output_tokens": _output_tokens(items)}
            sent["total_tokens"] = sent["input_tokens"] + sent["output_tokens"]
            self.server.usage_sent.append((kind, sent))
            completed = {"id": self._next_id("resp"), "status": "completed", "usage": sent}
            yield _sse({"type": "response.completed", "response": completed})
            if on_done is not None:
                on_done()

        return StreamingResponse(events(), media_type="text/event-stream")


def _usage_for(raw: bytes) -> dict[str, Any]:
    """Token counts that differ per request (about four bytes a token), a third cached."""
    prompt = 50 + len(raw) // 4
    cached = prompt // 3
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens_details": {"reasoning_tokens": 0},
    }


def _output_tokens(items: list[dict[str, Any]]) -> int:
    return 5 + len(json.dumps(items)) // 4


async def _text_deltas(item: dict[str, Any], index: int, delay: float) -> AsyncIterator[bytes]:
    text = item["content"][0]["text"]
    size = 24 if delay else max(len(text), 1)
    for start in range(0, len(text), size):
        if delay:
            await asyncio.sleep(delay)
        yield _sse(
            {
                "type": "response.output_text.delta",
                "item_id": item["id"],
                "output_index": index,
                "content_index": 0,
                "delta": text[start : start + size],
            }
        )


def _close(brain: Brain, turn: _Turn) -> None:
    brain.turn_closed(turn.prompt)


class _CutStream(Response):
    """Send the headers and one event, then end the connection without finishing it."""

    def __init__(self, first_event: bytes, on_cut: Any) -> None:
        super().__init__(media_type="text/event-stream")
        self.first_event = first_event
        self.on_cut = on_cut

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", b"text/event-stream")]  # chunked: no content-length
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": self.first_event, "more_body": True})
        await asyncio.sleep(0.2)
        self.on_cut()
        # Returning without the final body message makes the server drop the connection:
        # the client sees a stream that stopped before `response.completed`.


def _models(_request: Request) -> JSONResponse:
    model = {"id": MODEL_NAME, "object": "model", "owned_by": "baton"}
    return JSONResponse({"object": "list", "data": [model], "models": []})


async def _not_found(request: Request) -> JSONResponse:
    return JSONResponse({"error": {"message": f"no route {request.url.path}"}}, status_code=404)


def _app(server: ModelServer) -> Starlette:
    responder = _Responder(server)
    return Starlette(
        routes=[
            Route("/v1/responses", responder.responses, methods=["POST"]),
            Route("/responses", responder.responses, methods=["POST"]),
            Route("/v1/models", _models, methods=["GET"]),
            Route("/models", _models, methods=["GET"]),
            Route("/{path:path}", _not_found, methods=["GET", "POST", "PUT", "DELETE"]),
        ]
    )


@contextmanager
def openai_model_server(
    brain: Brain,
    *,
    stream_delay: float = 0.0,
    error_status: int = 500,
    shell_tool: str = "exec_command",
) -> Iterator[ModelServer]:
    """Serve the scripted model on a free loopback port for the duration of the block."""
    server = ModelServer(
        base_url="",
        brain=brain,
        stream_delay=stream_delay,
        error_status=error_status,
        shell_tool=shell_tool,
    )
    with running_app(_app(server)) as base_url:
        server.base_url = base_url
        yield server


def write_codex_home(codex_home: Path, server: ModelServer, *, retries: int = 0) -> Path:
    """A throw-away CODEX_HOME whose config.toml sends Codex to `server`; returns it.

    `retries` is how often Codex retries a failed request or stream (0: a model error
    shows at once, which keeps the turn timeline honest: one request, one turn).
    """
    codex_home.mkdir(parents=True, exist_ok=True)
    config = f"""\
model = "{MODEL_NAME}"
model_provider = "{PROVIDER_ID}"
check_for_update_on_startup = false
# The model's commands run in `bash -c`, not a login shell, and no snapshot of the login
# shell is taken: the machine's ~/.profile and ~/.bashrc (pyenv set up: about 0.7 s and
# 280 processes each time) are not under test.
allow_login_shell = false

[features]
shell_snapshot = false

[analytics]
enabled = false

[model_providers.{PROVIDER_ID}]
name = "Baton scripted model"
base_url = "{server.api_base}"
wire_api = "responses"
env_key = "{API_KEY_VARIABLE}"
request_max_retries = {retries}
stream_max_retries = {retries}
stream_idle_timeout_ms = 60000
"""
    (codex_home / "config.toml").write_text(config, encoding="utf-8")
    return codex_home


def codex_environment(home: Path, server: ModelServer, *, retries: int = 0) -> dict[str, str]:
    """Environment for `baton serve` so its Codex terminals use `server`, offline.

    Codex gets an isolated `CODEX_HOME` under `home` (never the user's), a dummy API key
    in the variable the provider config names, and the pinned CLIs first on `PATH`.
    """
    codex_home = write_codex_home(home / "codex-home", server, retries=retries)
    path = os.pathsep.join([str(AGENT_BIN_DIR), os.environ.get("PATH", "/usr/bin:/bin")])
    return {
        "CODEX_HOME": str(codex_home),
        API_KEY_VARIABLE: "baton-scripted-dummy-key",
        "PATH": path,
        # Nothing may leave the machine: no update checks, no telemetry exporters.
        "OTEL_SDK_DISABLED": "true",
        "NO_PROXY": "127.0.0.1,localhost",
    }
