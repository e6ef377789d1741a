"""A scripted OpenAI Chat Completions server, so the real Qwen Code and Copilot CLI run offline.

Qwen Code 0.24 with OpenAI-compatible auth sends `POST {OPENAI_BASE_URL}/chat/completions`
(`stream: true`, `stream_options.include_usage`): the whole conversation as `messages`
(`system`, `user`, `assistant` with `tool_calls`, `tool` results), the tools it offers as
`tools`. It reads server-sent events back, one `chat.completion.chunk` per `data:` line,
the last chunk carrying `usage`, then `data: [DONE]`. This app plays the model from a
`Brain`: the latest prompt the user typed and the tool results that came back since
decide whether the reply is a tool call (the CLI's shell tool with the step's command)
or the final text, streamed in small pieces. Files are written by the shell command too
(a heredoc): Qwen Code's `write_file` refuses to replace a file the session has not read,
and in YOLO mode its shell runs commands with backticks or `$(…)` as they are.

Requests that offer no shell tool are the CLI's side questions (a session title, a
suggestion for the next prompt, a summary): they get a short reply (a JSON object filled
from the schema when one is asked for) and never reach the brain, so they neither open
turns in its timeline nor look like a second prompt.

The CLIs differ in the shell tool's name and arguments and in the text they add to a
typed prompt: a `ChatDialect` says how (`qwen_chat.QWEN`, `copilot_chat.COPILOT`), and
the same modules point `baton serve`'s terminals at this server.

Misbehaviours (per role, decided by the brain): SLOW waits before replying, HTTP_500
answers with an HTTP error (400 unless `error_status` says otherwise: Qwen Code retries
a 5xx seven times over more than a minute before it shows the error), CUT_STREAM sends
one chunk and drops the connection, STALL accepts a turn's first request and sends
nothing (`StalledStream`).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send
from tests.e2e.model.brain import Brain, Misbehaviour
from tests.e2e.model.serving import StalledStream, running_app
from tests.e2e.model.step import Step, offered_name

__all__ = [
    "API_KEY",
    "MODEL_NAME",
    "ChatDialect",
    "ModelServer",
    "latest_prompt",
    "openai_chat_server",
]

API_KEY = "baton-offline-openai-key"
MODEL_NAME = "qwen3-coder-plus"
_CHUNK = 24  # characters per streamed text chunk, so streaming is visible on screen


@dataclass(frozen=True)
class ChatDialect:
    """How one CLI speaks Chat Completions: its shell tool and what it adds to prompts."""

    # The shell tool's name; a request offering it is a turn of the agent loop.
    shell_tool: str
    # Arguments of a shell call besides `command` and `description`.
    shell_arguments: Mapping[str, Any]
    # User-role text the CLI writes itself (context, not something the user typed).
    injected_prefixes: tuple[str, ...]
    # What the CLI puts before the typed text in the same message (cut off).
    typed_preamble: re.Pattern[str] | None = None
    # The file reader, offered in every turn of an agent whose shell is withheld.
    read_tool: str | None = None


@dataclass
class ModelServer:
    """A running scripted model: where it listens, its brain, and what it was asked."""

    base_url: str
    brain: Brain
    dialect: ChatDialect
    requests: list[dict[str, Any]] = field(default_factory=list)
    # The final answer of every turn, oldest first.
    answers: list[str] = field(default_factory=list)
    # The `usage` of every reply sent (side requests' too: the CLI counts them), oldest first.
    usage_sent: list[dict[str, Any]] = field(default_factory=list)
    # Seconds between streamed chunks of text (0: no pause).
    stream_delay: float = 0.0
    # HTTP status of a HTTP_500 misbehaviour's answer (a 400 is reported at once).
    error_status: int = 400
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def api_base(self) -> str:
        """What OPENAI_BASE_URL must be (the API root, `/v1` included)."""
        return f"{self.base_url}/v1"

    def record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)

    def turn_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [body for body in self.requests if _is_turn_request(body, self.dialect)]

    def conversation_usage(self) -> dict[str, int]:
        """What the replies reported, summed the way Baton reports usage."""
        with self._lock:
            sent = list(self.usage_sent)
        return {
            "input_tokens": sum(u["prompt_tokens"] for u in sent),
            "cached_input_tokens": sum(u["prompt_tokens_details"]["cached_tokens"] for u in sent),
            "output_tokens": sum(u["completion_tokens"] for u in sent),
        }


# -- reading a request -------------------------------------------------------------------


@dataclass(frozen=True)
class _Turn:
    """What one request asks: the user's latest prompt and the tool results since."""

    prompt: str
    done_steps: int
    last_tool_output: str


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and part.get("type", "text") == "text"
        ]
        return "\n".join(part for part in parts if part)
    return ""


def _typed_text(message: Mapping[str, Any], dialect: ChatDialect) -> str:
    """The text of a user message the user typed; "" for text the CLI injected."""
    content = message.get("content")
    parts = [content] if isinstance(content, str) else [_text_of([part]) for part in content or []]
    if dialect.typed_preamble is not None:
        parts = [dialect.typed_preamble.sub("", text, count=1) for text in parts]
    typed = [
        text
        for text in parts
        if isinstance(text, str)
        and text.strip()
        and not text.lstrip().startswith(dialect.injected_prefixes)
    ]
    return "\n".join(typed).strip()


def latest_prompt(messages: Sequence[Mapping[str, Any]], dialect: ChatDialect) -> _Turn | None:
    """The last user-typed message and the `tool` results after it (the last one's text)."""
    start = None
    for index, message in enumerate(messages):
        if message.get("role") == "user" and _typed_text(message, dialect):
            start = index
    if start is None:
        return None
    results = [m for m in messages[start + 1 :] if m.get("role") == "tool"]
    last = _text_of(results[-1].get("content")) if results else ""
    return _Turn(_typed_text(messages[start], dialect), len(results), last)


def _instructions_of(body: Mapping[str, Any]) -> str:
    """The system text of a request."""
    return "\n".join(
        _text_of(message.get("content"))
        for message in body.get("messages") or []
        if message.get("role") in ("system", "developer")
    )


def _tool_names(body: Mapping[str, Any]) -> set[str]:
    names = set()
    for tool in body.get("tools") or []:
        function = (tool or {}).get("function") or {}
        if isinstance(function.get("name"), str):
            names.add(function["name"])
    return names


def _is_turn_request(body: Mapping[str, Any], dialect: ChatDialect) -> bool:
    """A request of the agent loop: it offers the shell tool, or the file reader to an
    agent whose tool list withholds the shell. Side requests offer neither."""
    offered = _tool_names(body)
    return dialect.shell_tool in offered or (dialect.read_tool or dialect.shell_tool) in offered


# -- writing a reply ----------------------------------------------------------------------


def _schema_value(schema: Mapping[str, Any]) -> Any:
    """A value that satisfies a simple JSON schema (what side questions may ask for)."""
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = str(schema.get("type", "string")).lower()
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: _schema_value(sub) for name, sub in properties.items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return 0
    if kind == "boolean":
        return False
    return "scripted"


def _side_answer(body: Mapping[str, Any]) -> str:
    response_format = body.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema")
    if isinstance(schema, Mapping):
        return json.dumps(_schema_value(schema))
    if response_format.get("type") == "json_object":
        return json.dumps({"title": "Scripted task"})
    return "Scripted task"


def _usage_for(raw: bytes, output: Any) -> dict[str, Any]:
    """Token counts that differ per request (about four bytes a token), a third cached."""
    prompt = 50 + len(raw) // 4
    completion = 5 + len(json.dumps(output)) // 4
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": prompt // 3},
    }


def _tool_call(step: Step, call_id: str, dialect: ChatDialect, offered: set[str]) -> dict[str, Any]:
    """The call for a step: the named tool it asks for (under the name the CLI offers
    it), else the shell command."""
    if step.tool is not None:
        name = offered_name(offered, step.tool) or step.tool
        arguments = dict(step.arguments or {})
    else:
        command = step.command or ""
        first_line = command.strip().splitlines()[0] if command.strip() else "command"
        name = dialect.shell_tool
        arguments = {"command": command, "description": first_line[:60], **dialect.shell_arguments}
    return {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def _chunk(completion_id: str, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": 0,
        "model": MODEL_NAME,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _sse(data: Mapping[str, Any] | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    return f"data: {text}\n\n".encode()


class _Responder:
    """Turns brain decisions into Chat Completions replies."""

    def __init__(self, server: ModelServer) -> None:
        self.server = server
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}-{next(self._ids)}"

    async def completions(self, request: Request) -> Response:
        raw = await request.body()
        body = json.loads(raw or b"{}")
        self.server.record(body)
        stream = bool(body.get("stream"))
        dialect = self.server.dialect
        if not _is_turn_request(body, dialect):
            text = _side_answer(body)
            usage = _usage_for(raw, text)
            self._count(usage)
            return self._reply(text, None, usage, stream)
        turn = latest_prompt(body.get("messages") or [], dialect)
        if turn is None:
            return self._reply("READY.", None, _usage_for(raw, "READY."), stream)
        brain = self.server.brain
        if turn.done_steps == 0:
            brain.turn_opened(turn.prompt)
        if brain.takes_stall(turn.prompt, turn.done_steps):
            return StalledStream()
        delay = brain.delay_for(turn.prompt)
        if delay:
            await asyncio.sleep(delay)
        behaviour = brain.misbehaviour_for(turn.prompt)
        if behaviour is Misbehaviour.HTTP_500:
            brain.turn_closed(turn.prompt)
            error = {"message": "scripted model failure", "type": "server_error", "code": None}
            return JSONResponse({"error": error}, status_code=self.server.error_status)
        if behaviour is Misbehaviour.CUT_STREAM:
            first = _sse(_chunk(self._next_id("chatcmpl"), {"role": "assistant"}, None))
            return _CutStream(first, lambda: brain.turn_closed(turn.prompt))
        step = brain.next_step(
            turn.prompt, turn.done_steps, turn.last_tool_output, _instructions_of(body)
        )
        if step.is_final:
            text = step.message or ""

            def on_sent() -> None:
                with self.server._lock:
                    self.server.answers.append(text)
                brain.turn_closed(turn.prompt)

            usage = _usage_for(raw, text)
            self._count(usage)
            return self._reply(text, None, usage, stream, on_sent=on_sent)
        call = _tool_call(step, self._next_id("call"), dialect, _tool_names(body))
        usage = _usage_for(raw, call)
        self._count(usage)
        return self._reply(None, call, usage, stream)

    def _count(self, usage: dict[str, Any]) -> None:
        with self.server._lock:
            self.server.usage_sent.append(usage)

    def _reply(
        self,
        text: str | None,
        call: dict[str, Any] | None,
        usage: dict[str, Any],
        stream: bool,
        *,
        on_sent: Any = None,
    ) -> Response:
        completion_id = self._next_id("chatcmpl")
        finish = "tool_calls" if call is not None else "stop"
        if not stream:
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if call is not None:
                message["tool_calls"] = [{k: v for k, v in call.items() if k != "index"}]
            if on_sent is not None:
                on_sent()
            return JSONResponse(
                {
                    "id": completion_id,
                    "object": "chat.completion",
                    "created": 0,
                    "model": MODEL_NAME,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                }
            )
        delay = self.server.stream_delay

        async def events() -> AsyncIterator[bytes]:
            yield _sse(_chunk(completion_id, {"role": "assistant", "content": ""}, None))
            if call is not None:
                yield _sse(_chunk(completion_id, {"tool_calls": [call]}, None))
            for start in range(0, len(text or ""), _CHUNK):
                await asyncio.sleep(delay or 0.01)
                piece = (text or "")[start : start + _CHUNK]
                yield _sse(_chunk(completion_id, {"content": piece}, None))
            yield _sse(_chunk(completion_id, {}, finish))
            final = _chunk(completion_id, {}, None)
            final["choices"] = []
            final["usage"] = usage
            yield _sse(final)
            yield _sse("[DONE]")
            if on_sent is not None:
                on_sent()

        return StreamingResponse(events(), media_type="text/event-stream")


class _CutStream(Response):
    """Send the headers and one chunk, then end the connection without finishing it."""

    def __init__(self, first_event: bytes, on_cut: Any) -> None:
        super().__init__(media_type="text/event-stream")
        self.first_event = first_event
        self.on_cut = on_cut

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": self.first_event, "more_body": True})
        await asyncio.sleep(0.2)
        self.on_cut()
        # Returning without the final body message drops the connection mid-stream.


def _models(_request: Request) -> JSONResponse:
    model = {"id": MODEL_NAME, "object": "model", "owned_by": "baton"}
    return JSONResponse({"object": "list", "data": [model]})


async def _not_found(request: Request) -> JSONResponse:
    return JSONResponse({"error": {"message": f"no route {request.url.path}"}}, status_code=404)


def _app(server: ModelServer) -> Starlette:
    responder = _Responder(server)
    return Starlette(
        routes=[
            Route("/v1/chat/completions", responder.completions, methods=["POST"]),
            Route("/chat/completions", responder.completions, methods=["POST"]),
            Route("/v1/models", _models, methods=["GET"]),
            Route("/models", _models, methods=["GET"]),
            Route("/{path:path}", _not_found, methods=["GET", "POST", "PUT", "DELETE"]),
        ]
    )


@contextmanager
def openai_chat_server(
    brain: Brain, dialect: ChatDialect, *, stream_delay: float = 0.0
) -> Iterator[ModelServer]:
    """Serve the scripted Chat Completions model on a free loopback port for the block."""
    server = ModelServer(base_url="", brain=brain, dialect=dialect, stream_delay=stream_delay)
    with running_app(_app(server)) as base_url:
        server.base_url = base_url
        yield server
