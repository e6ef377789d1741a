"""How the suite spreads over xdist workers: which tests must share one (tests/support)."""

from __future__ import annotations

from tests.support.scheduling import session_fixture_names, unit_of_work


def test_the_session_fixtures_are_found_in_the_conftest_files() -> None:
    assert {"finished_run", "shared_baton_server"} <= session_fixture_names()
    assert "baton_server" not in session_fixture_names()  # one per test


def test_a_unit_test_is_a_unit_of_its_own() -> None:
    nodeid = "tests/unit/test_screen.py::test_x"
    assert unit_of_work(nodeid) == nodeid


def test_an_integration_or_e2e_file_is_one_unit() -> None:
    assert unit_of_work("tests/e2e/test_full_loop.py::test_a[codex]") == (
        "tests/e2e/test_full_loop.py"
    )
    assert unit_of_work("tests/integration/server/test_events.py::test_b") == (
        "tests/integration/server/test_events.py"
    )


def test_the_files_sharing_a_session_fixture_are_one_unit() -> None:
    watch = unit_of_work("tests/integration/cockpit/test_watch_in_tmux.py::test_a")
    report = unit_of_work("tests/integration/cockpit/test_report_real_run.py::test_b")
    assert watch == report == "fixture:finished_run"
    assert unit_of_work("tests/integration/server/test_api.py::test_health") == (
        "fixture:shared_baton_server"
    )
