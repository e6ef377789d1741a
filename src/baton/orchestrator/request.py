"""A feature request in plain words: what `baton run ARG` means, and the prompts it builds.

`baton run ARG` takes one argument of three kinds, told apart by the file system:
an existing `*.json` file is the JSON config (as it always was), any other existing file
is a prompt file (as PROMPT_FILE), and anything else is the request itself, in words.
A word with no space that looks like a path (`loop.json`, `docs/feature.md`) but names
no file is refused, so a typo is not sent to five agents as a feature request.

A request in words becomes a prompt of the seed format: the sentence, an explore
summary that says no one has explored yet, and the scenario test built from `--test`.
`baton new` writes a template of the same format to fill in.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from baton.errors import ConfigError, PromptError
from baton.hints import baton_executable
from baton.orchestrator.prompts import EXPLORE_MARKER, SCENARIO_MARKER, prompt_example

__all__ = [
    "Argument",
    "ArgumentKind",
    "classify_argument",
    "prompt_template",
    "run_inputs",
    "sentence_prompt",
    "write_template",
]

_PATH_SUFFIXES = frozenset({".json", ".md", ".txt", ".prompt", ".markdown"})


class ArgumentKind(StrEnum):
    CONFIG = "config"
    PROMPT_FILE = "prompt file"
    REQUEST = "request"


@dataclass(frozen=True)
class Argument:
    """`baton run`'s positional argument, once its kind is known."""

    kind: ArgumentKind
    text: str

    @property
    def path(self) -> Path:
        return Path(self.text).expanduser()


def classify_argument(raw: str) -> Argument:
    """Config file, prompt file or a request in words; ConfigError for a missing file."""
    path = Path(raw).expanduser()
    if raw.strip() and path.is_file():
        kind = ArgumentKind.CONFIG if path.suffix == ".json" else ArgumentKind.PROMPT_FILE
        return Argument(kind, raw)
    if raw.strip() and path.is_dir():
        raise ConfigError(
            f"{raw} is a directory; give a JSON config, a prompt file or the request in quotes"
        )
    if not raw.strip():
        raise PromptError("the request is blank", prompt_example())
    looks_like_a_path = not any(ch.isspace() for ch in raw) and (
        path.suffix in _PATH_SUFFIXES or os.sep in raw
    )
    if looks_like_a_path:
        raise ConfigError(
            f"no file {raw}: a JSON config or prompt file must exist "
            f'(a request in words goes in quotes: {_baton()} run "Add …" --test CMD)'
        )
    return Argument(ArgumentKind.REQUEST, raw)


def run_inputs(
    argument: str | None,
    test_command: str | None,
    options: Mapping[str, object],
    environ: Mapping[str, str],
) -> tuple[Path | None, dict[str, object]]:
    """`baton run`'s argument and `--test` as (config file, options): what load_settings takes.

    A request in words becomes the `prompt` option; its test command also becomes
    PROJECT_TEST_CMD when neither that option nor the variable sets one.
    """
    chosen = dict(options)
    if argument is None:
        if test_command is not None:
            raise ConfigError(
                f'--test goes with a request in words: {_baton()} run "Add …" --test CMD'
            )
        return None, chosen
    given = classify_argument(argument)
    if given.kind is not ArgumentKind.REQUEST and test_command is not None:
        raise ConfigError(
            f"--test goes with a request in words, not a {given.kind} ({argument}); "
            "the scenario test is in the prompt"
        )
    if given.kind is ArgumentKind.CONFIG:
        return given.path, chosen
    if chosen.get("prompt") is not None or chosen.get("prompt_file") is not None:
        raise ConfigError(f"two prompts: {argument!r} and --prompt/--prompt-file; give one")
    if given.kind is ArgumentKind.PROMPT_FILE:
        chosen["prompt_file"] = given.path
        return None, chosen
    project_test = chosen.get("project_test_cmd") or environ.get("PROJECT_TEST_CMD") or ""
    test = (test_command or str(project_test)).strip()
    if not test:
        raise PromptError(
            "a request in words needs its scenario test: add --test CMD "
            "(the command that passes once the request is done)",
            prompt_example(),
        )
    chosen["prompt"] = sentence_prompt(given.text, test)
    if not project_test:
        chosen["project_test_cmd"] = test
    return None, chosen


def _baton() -> str:
    return shlex.join(baton_executable())


def sentence_prompt(request: str, test_command: str) -> str:
    """The seed-format prompt for a request given in words and its scenario test command."""
    request = request.strip()
    test_command = test_command.strip()
    return "\n".join(
        [
            request,
            "",
            EXPLORE_MARKER,
            f"The request, in the user's words: {request}",
            "No one has explored the code for it yet: find where it belongs in this project",
            "and what it touches before planning the change.",
            "",
            SCENARIO_MARKER,
            f"In the project directory run: {test_command}",
            "PASS when it exits 0 and its output shows the request above working.",
            "FAIL otherwise, with the failing output as evidence.",
            "",
        ]
    )


def prompt_template() -> str:
    """The commented prompt `baton new` writes; unfilled, `baton run` refuses it."""
    return f"""<!-- A feature request for `baton run`. Fill in the three parts below and run:
         baton run THIS_FILE
     Text between these comment marks is a note for you; a section that holds nothing
     else counts as blank. Keep the two marker lines exactly as they are. -->

<!-- 1. The request, in a sentence or a paragraph. For example:
        Add a --json flag to the export command. -->

{EXPLORE_MARKER}
<!-- 2. What you know of the code, for the analyst to start from: where the feature
        belongs, the files and functions it touches, constraints. For example:
        The export command is in src/app/export.py; it prints CSV only. -->

{SCENARIO_MARKER}
<!-- 3. How the tester tells it is done: the command to run and what PASS means.
        For example:
        Run: pytest -q tests/test_export.py. PASS when it exits 0. -->
"""


def write_template(path: Path) -> Path:
    """Write the template to `path` (never over an existing file); the absolute path."""
    target = path.expanduser().absolute()
    if target.exists():
        raise ConfigError(f"{target} exists; not overwritten (give another path)")
    if not target.parent.is_dir():
        raise ConfigError(f"{target.parent} is not a directory")
    try:
        with target.open("x", encoding="utf-8") as handle:
            handle.write(prompt_template())
    except FileExistsError:
        raise ConfigError(f"{target} exists; not overwritten (give another path)") from None
    except OSError as error:
        raise ConfigError(f"cannot write {target}: {error.strerror or error}") from None
    return target
