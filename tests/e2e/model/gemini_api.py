"""A scripted Gemini API (`generateContent`) on loopback, so the real Gemini CLI runs offline.

Gemini CLI 0.61 sends its model requests to `GOOGLE_GEMINI_BASE_URL` +
`/v1beta/models/<model>:streamGenerateContent?alt=sse` (server-sent events, one
`GenerateContentResponse` per `data:` line) and, for small side questions,
`:generateContent`. This app plays the model from a `Brain`: the latest prompt the user
typed and the function responses that came back since decide whether the reply is a
`run_shell_command` function call or the final text.

Side requests (the next-speaker check, the model router, loop detection) ask for JSON
(`generationConfig.responseMimeType`); they get an object filled from the schema they
send (the first enum value, else a short string) and never count as turns. Token counts
in `usageMetadata` differ per request, so usage read back from the CLI can be compared.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from tests.e2e.clis import AGENT_BIN_DIR
from tests.e2e.model.brain import Brain, Misbehaviour, Step
from tests.e2e.model.serving import StalledStream, running_app
from tests.e2e.model.step import offered_name

__all__ = [
    "API_KEY",
    "MODEL_NAME",
    "ModelServer",
    "gemini_environment",
    "gemini_model_server",
    "latest_prompt",
]

API_KEY = "baton-offline-gemini-key"
MODEL_NAME = "gemini-2.5-pro"
_SHELL_TOOL = "run_shell_command"
_LOOP_TOOLS = (_SHELL_TOOL, "read_file")
_CHUNK = 24  # characters per streamed text chunk, so streaming is visible on screen
# User-role text Gemini CLI writes itself (context, not something the user typed).
_INJECTED_PREFIXES = (
    "<session_context>",
    "This is the Gemini CLI. We are setting up the context",
    "<system-reminder>",
    "System: Please continue.",
    "Please continue.",
)


@dataclass
class ModelServer:
    """A running scripted model: where it listens, its brain, and what it was asked."""

    base_url: str
    brain: Brain
    requests: list[dict[str, Any]] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    # `usageMetadata` of every turn reply sent, oldest first.
    usage_sent: list[dict[str, int]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append({"path": path, **body})

    def conversation_usage(self) -> dict[str, int]:
        """What the turn replies reported, summed the way Baton reports usage."""
        with self._lock:
            sent = list(self.usage_sent)
        return {
            "input_tokens": sum(u["promptTokenCount"] for u in sent),
            "cached_input_tokens": sum(u.get("cachedContentTokenCount", 0) for u in sent),
            "output_tokens": sum(u["candidatesTokenCount"] for u in sent),
        }

    def turn_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [body for body in self.requests if _is_turn_request(body)]


# -- reading a request -------------------------------------------------------------------


def _typed_text(part: Mapping[str, Any]) -> str:
    text = part.get("text")
    if not isinstance(text, str) or part.get("thought"):
        return ""
    stripped = text.strip()
    if stripped.startswith(_INJECTED_PREFIXES):
        return ""
    return stripped


def _response_text(part: Mapping[str, Any]) -> str:
    response = (part.get("functionResponse") or {}).get("response") or {}
    if isinstance(response, Mapping):
        for key in ("output", "llmContent", "error"):
            value = response.get(key)
            if isinstance(value, str):
                return value
    return json.dumps(response)


def latest_prompt(contents: list[dict[str, Any]]) -> tuple[str, int, str]:
    """The latest typed prompt, the function responses after it, and the last one's text."""
    done_steps = 0
    last_output: str | None = None
    for content in reversed(contents):
        if content.get("role") != "user":
            continue
        parts = [part for part in content.get("parts") or [] if isinstance(part, dict)]
        responses = [part for part in parts if "functionResponse" in part]
        if responses:
            done_steps += len(responses)
            if last_output is None:
                last_output = _response_text(responses[-1])
            continue
        typed = [text for text in map(_typed_text, parts) if text]
        if typed:
            return "\n".join(typed), done_steps, last_output or ""
    return "", done_steps, last_output or ""


def _is_turn_request(body: Mapping[str, Any]) -> bool:
    """A request of the agent loop: it offers the shell tool, or the file reader to an
    agent whose tool list withholds the shell. Side requests offer neither."""
    for tool in body.get("tools") or []:
        for declaration in (tool or {}).get("functionDeclarations") or []:
            if isinstance(declaration, dict) and declaration.get("name") in _LOOP_TOOLS:
                return True
    return False


# -- writing a reply ----------------------------------------------------------------------


def _schema_value(schema: Mapping[str, Any]) -> Any:
    """A value that satisfies a simple JSON schema (what the CLI's side questions send)."""
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
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if isinstance(schema, Mapping):
        value = _schema_value(schema)
        if isinstance(value, dict):
            # The next-speaker check: the user speaks next, the turn is over.
            if "next_speaker" in value:
                value["next_speaker"] = "user"
            return json.dumps(value)
    if config.get("responseMimeType") == "application/json":
        return json.dumps({"next_speaker": "user", "reasoning": "scripted"})
    return "Scripted session"


def _usage_for(body: Mapping[str, Any], parts: list[dict[str, Any]]) -> dict[str, int]:
    prompt = 50 + len(json.dumps(body)) // 4
    output = 5 + len(json.dumps(parts)) // 4
    cached = prompt // 3
    return {
        "promptTokenCount": prompt,
        "cachedContentTokenCount": cached,
        "candidatesTokenCount": output,
        "totalTokenCount": prompt + output,
    }


def _declared(body: Mapping[str, Any]) -> set[str]:
    """The names of the functions a request declares."""
    return {
        str(declaration.get("name"))
        for tool in body.get("tools") or []
        for declaration in (tool or {}).get("functionDeclarations") or []
        if isinstance(declaration, dict)
    }


def _parts_for(step: Step, call_number: int, declared: set[str]) -> list[dict[str, Any]]:
    """The reply's parts: the final text, a call to the named (MCP) tool the step asks
    for, a `write_file` call for a file the step writes (Gemini CLI refuses shell
    commands with backticks or `$(`, even in a quoted heredoc, and source files have
    backticks), or a `run_shell_command` call."""
    if step.is_final:
        return [{"text": step.message or ""}]
    if step.tool is not None:
        name = offered_name(declared, step.tool)
        if name is None:
            return [{"text": f"The {step.tool} tool is not available to me."}]
        call = {"id": f"call-{call_number}", "name": name, "args": dict(step.arguments or {})}
        return [{"functionCall": call}]
    if step.writes is not None:
        path, text = step.writes
        body = text if text.endswith("\n") else text + "\n"
        call = {"file_path": str(path), "content": body}
        return [{"functionCall": {"id": f"call-{call_number}", "name": "write_file", "args": call}}]
    command = step.command or ""
    first_line = command.strip().splitlines()[0] if command.strip() else "command"
    return [
        {
            "functionCall": {
                "id": f"call-{call_number}",
                "name": _SHELL_TOOL,
                "args": {"command": command, "description": first_line[:60]},
            }
        }
    ]


def _response(parts: list[dict[str, Any]], usage: dict[str, int] | None) -> dict[str, Any]:
    reply: dict[str, Any] = {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "modelVersion": MODEL_NAME,
    }
    if usage is not None:
        reply["usageMetadata"] = usage
    return reply


def _chunks(parts: list[dict[str, Any]], usage: dict[str, int]) -> list[dict[str, Any]]:
    """A streamed reply: text in small pieces, the usage and finish reason on the last."""
    if len(parts) == 1 and "text" in parts[0]:
        text = parts[0]["text"] or " "
        pieces = [text[i : i + _CHUNK] for i in range(0, len(text), _CHUNK)]
    else:
        pieces = []
    if not pieces:
        return [_response(parts, usage)]
    chunks = []
    for number, piece in enumerate(pieces):
        last = number == len(pieces) - 1
        chunk = _response([{"text": piece}], usage if last else None)
        if not last:
            del chunk["candidates"][0]["finishReason"]
        chunks.append(chunk)
    return chunks


def _error(status: int, text: str) -> JSONResponse:
    code = {400: "INVALID_ARGUMENT", 500: "INTERNAL"}.get(status, "UNKNOWN")
    return JSONResponse(
        {"error": {"code": status, "message": text, "status": code}}, status_code=status
    )


# -- the app ------------------------------------------------------------------------------


def create_app(server: ModelServer) -> Starlette:
    """The ASGI app answering Gemini CLI's requests from `server.brain`."""
    brain = server.brain
    calls = iter(range(1, 1_000_000))

    async def models(request: Request) -> Response:
        path = request.path_params["rest"]
        if request.method != "POST":
            return JSONResponse({"models": [{"name": f"models/{MODEL_NAME}"}]})
        body = await request.json()
        server.record(path, body)
        if path.endswith(":countTokens"):
            return JSONResponse({"totalTokens": 50 + len(json.dumps(body)) // 4})
        if path.endswith(":embedContent") or path.endswith(":batchEmbedContents"):
            return JSONResponse({"embeddings": []})
        stream = path.endswith(":streamGenerateContent")
        if not _is_turn_request(body):
            parts = [{"text": _side_answer(body)}]
            return _reply(parts, _usage_for(body, parts), stream)
        prompt, done_steps, last_output = latest_prompt(list(body.get("contents") or []))
        if done_steps == 0:
            brain.turn_opened(prompt)
        if brain.takes_stall(prompt, done_steps):
            return StalledStream()
        delay = brain.delay_for(prompt)
        if delay:
            await asyncio.sleep(delay)
        if brain.misbehaviour_for(prompt) is Misbehaviour.HTTP_500:
            # Gemini CLI 0.61 retries a 5xx at once and without end (thousands of requests
            # a minute); a 400 is the failure it reports instead of retrying.
            brain.turn_closed(prompt)
            return _error(400, "Scripted failure: the model cannot answer")
        step = brain.next_step(prompt, done_steps, last_output)
        parts = _parts_for(step, next(calls), _declared(body))
        usage = _usage_for(body, parts)
        with server._lock:
            server.usage_sent.append(usage)

        def on_sent() -> None:
            if step.is_final:
                with server._lock:
                    server.answers.append(step.message or "")
                brain.turn_closed(prompt)

        return _reply(parts, usage, stream, on_sent=on_sent)

    async def anything_else(request: Request) -> Response:
        return JSONResponse({})

    return Starlette(
        routes=[
            Route("/{version}/models/{rest:path}", models, methods=["GET", "POST"]),
            Route("/{path:path}", anything_else, methods=["GET", "POST", "HEAD", "PUT"]),
        ]
    )


def _reply(
    parts: list[dict[str, Any]],
    usage: dict[str, int],
    stream: bool,
    *,
    on_sent: Any = None,
) -> Response:
    if not stream:
        if on_sent is not None:
            on_sent()
        return JSONResponse(_response(parts, usage))

    async def events() -> AsyncIterator[bytes]:
        for chunk in _chunks(parts, usage):
            yield f"data: {json.dumps(chunk)}\r\n\r\n".encode()
            await asyncio.sleep(0.01)
        if on_sent is not None:
            on_sent()

    return StreamingResponse(events(), media_type="text/event-stream")


# -- running it ---------------------------------------------------------------------------


@contextmanager
def gemini_model_server(brain: Brain) -> Iterator[ModelServer]:
    """Serve the scripted Gemini API on a free loopback port for the block."""
    server = ModelServer(base_url="", brain=brain)
    with running_app(create_app(server)) as base_url:
        server.base_url = base_url
        yield server


def gemini_environment(home: Path, server: ModelServer) -> dict[str, str]:
    """Environment for `baton serve` so its Gemini CLI terminals use `server`, offline.

    GEMINI_CLI_HOME (Gemini CLI's own stand-in for HOME, so the other CLIs of a mixed
    team keep theirs) is a throw-away directory whose `.gemini/settings.json` picks
    API-key auth and the scripted model, and switches off telemetry, usage statistics
    and update checks.
    """
    home = home / "gemini-home"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "model": {"name": MODEL_NAME},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "ui": {"hideTips": True, "hideBanner": True},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings, indent=2), "utf-8")
    return {
        "GEMINI_CLI_HOME": str(home),
        "PATH": f"{AGENT_BIN_DIR}:{os.environ.get('PATH', '/usr/local/bin:/usr/bin:/bin')}",
        "GOOGLE_GEMINI_BASE_URL": server.base_url,
        "GEMINI_API_KEY": API_KEY,
        "GEMINI_CLI_NO_RELAUNCH": "true",
    }
