"""How the suite spreads over xdist workers: which tests must share one (tests/support)."""

from __future__ import annotations

from tests.support.scheduling import (
    auto_worker_count,
    session_fixture_names,
    shares_module_state,
    unit_of_work,
)


def test_the_session_fixtures_are_found_in_the_conftest_files() -> None:
    assert {"finished_run", "shared_baton_server"} <= session_fixture_names()
    assert "baton_server" not in session_fixture_names()  # one per test


def test_a_unit_test_is_a_unit_of_its_own() -> None:
    nodeid = "tests/unit/test_screen.py::test_x"
    assert unit_of_work(nodeid) == nodeid


def test_a_test_of_a_file_without_shared_state_is_a_unit_of_its_own() -> None:
    nodeid = "tests/e2e/test_agent_restart.py::test_a_stalled_stream[codex]"
    assert unit_of_work(nodeid) == nodeid


def test_module_state_is_told_from_per_test_fixtures() -> None:
    assert shares_module_state('@pytest.fixture(scope="module")\ndef server(): ...\n')
    assert shares_module_state("@pytest.fixture(scope='class')\ndef server(): ...\n")
    assert shares_module_state("def setup_module():\n    ...\n")
    assert not shares_module_state("@pytest.fixture\ndef server(): ...\n")
    assert not shares_module_state('@pytest.fixture(scope="function")\ndef s(): ...\n')


def test_the_files_sharing_a_session_fixture_are_one_unit() -> None:
    watch = unit_of_work("tests/integration/cockpit/test_watch_in_tmux.py::test_a")
    report = unit_of_work("tests/integration/cockpit/test_report_real_run.py::test_b")
    assert watch == report == "fixture:finished_run"
    assert unit_of_work("tests/integration/server/test_api.py::test_health") == (
        "fixture:shared_baton_server"
    )


def test_auto_starts_two_workers_per_cpu_unless_the_environment_names_a_number() -> None:
    assert auto_worker_count({}, 2) == 4
    assert auto_worker_count({}, 0) == 2
    assert auto_worker_count({"PYTEST_XDIST_AUTO_NUM_WORKERS": "3"}, 2) is None
    assert auto_worker_count({"PYTEST_XDIST_AUTO_NUM_WORKERS": ""}, 2) == 4
