"""What a `baton run` and a scripted agent load when they start: no more than they use.

Every loop of a batch starts one `baton run` and five agents, each a fresh Python; an
import they never use is paid once per process, on every loop, by the whole machine.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
from pathlib import Path

from baton.tls import tls_verify_for

_RUN_MODULES = (
    "baton.cli",
    "baton.orchestrator.loop",
    "baton.orchestrator.config",
    "baton.providers",
    "baton.providers.scripted",
)


def _loaded_after(*modules: str) -> set[str]:
    code = (
        "import importlib, json, sys\n"
        f"for name in {list(modules)!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout))


def test_baton_run_does_not_load_the_screen_emulator() -> None:
    # pyte renders raw pane logs in the server; `baton run` reads screens as text.
    assert "pyte" not in _loaded_after(*_RUN_MODULES)


def test_the_screen_helpers_still_render_bytes() -> None:
    from baton.screen import render_bytes

    assert render_bytes(b"abc\rX", columns=10, rows=2) == "Xbc"


def test_a_plain_http_api_gets_a_verifying_context_without_the_ca_bundle() -> None:
    verify = tls_verify_for("http://127.0.0.1:9889")
    assert isinstance(verify, ssl.SSLContext)
    assert verify.verify_mode == ssl.CERT_REQUIRED and verify.check_hostname
    assert verify.get_ca_certs() == []  # nothing loaded: cheap, and trusts no https peer


def test_an_https_api_keeps_the_default_verification() -> None:
    assert tls_verify_for("https://baton.example:9889") is True
    assert tls_verify_for("HTTPS://baton.example") is True


def test_every_setting_keeps_its_help_line_from_the_attribute_docstring() -> None:
    from baton.orchestrator.config import SETTING_KEYS

    helps = {key.attribute: key.help for key in SETTING_KEYS}
    assert helps["api"] == "Base URL of the CAO-compatible server (baton serve or cao-server)."
    assert all(helps.values()), [name for name, text in helps.items() if not text]


def test_attribute_docs_reads_the_string_under_each_annotated_attribute(tmp_path) -> None:
    from baton.orchestrator.config_keys import attribute_docs

    source = tmp_path / "sample.py"
    source.write_text(
        "class Other:\n    a: int = 1\n    '''not this one'''\n\n"
        "class Sample:\n    a: int = 1\n    '''The a.'''\n    b: str = ''\n"
        "    c: int = 2\n    '''The c,\n    on two lines.'''\n    d = 4\n    '''untyped'''\n"
    )
    assert attribute_docs(source, "Sample") == {"a": "The a.", "c": "The c,\n    on two lines."}


def test_the_notifier_loads_the_ca_bundle_only_for_a_public_channel(tmp_path: Path) -> None:
    from baton.orchestrator.config import Settings
    from baton.orchestrator.notify import notify_tls_verify

    local = notify_tls_verify(Settings(wd=tmp_path, api="http://127.0.0.1:9889"))
    assert isinstance(local, ssl.SSLContext) and local.get_ca_certs() == []
    ntfy = Settings(wd=tmp_path, api="http://127.0.0.1:9889", ntfy_topic="baton-runs")
    assert notify_tls_verify(ntfy) is True
    webhook = Settings(wd=tmp_path, api="http://127.0.0.1:9889", webhook_url="https://h.example")
    assert notify_tls_verify(webhook) is True
    assert notify_tls_verify(Settings(wd=tmp_path, api="https://baton.example")) is True
