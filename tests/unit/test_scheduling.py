"""How the suite spreads over xdist workers: which tests must share one (tests/support)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tests.support.scheduling import (
    SuiteScheduling,
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


def test_auto_starts_four_workers_per_cpu_unless_the_environment_names_a_number() -> None:
    assert auto_worker_count({}, 2) == 8
    assert auto_worker_count({}, 0) == 4
    assert auto_worker_count({"PYTEST_XDIST_AUTO_NUM_WORKERS": "3"}, 2) is None
    assert auto_worker_count({"PYTEST_XDIST_AUTO_NUM_WORKERS": ""}, 2) == 8


class _Worker:
    """The side of an xdist worker the scheduler talks to: what it was told to run."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


class _Config:
    def __init__(self, workers: int) -> None:
        self.option = SimpleNamespace(loadscopereorder=True)
        self.workers = workers

    def getvalue(self, name: str) -> list[str]:
        assert name == "tx"
        return [f"{self.workers}*popen"]


def _scheduled(collection: list[str], workers: int, busy: int) -> tuple[Any, list[_Worker]]:
    """The suite's scheduler after its first distribution of `collection`, with `busy`
    workers while end-to-end units wait."""
    scheduling = SuiteScheduling(_Config(workers))
    scheduling.end_to_end_workers = busy
    nodes = [_Worker(f"gw{i}") for i in range(workers)]
    for node in nodes:
        scheduling.add_node(node)
        scheduling.add_node_collection(node, collection)
    scheduling.schedule()
    return scheduling, nodes


def _finish_first(scheduling: Any, node: _Worker, done: dict[str, int]) -> None:
    name = node.gateway.id
    scheduling.mark_test_complete(node, node.sent[done.get(name, 0)])
    done[name] = done.get(name, 0) + 1


E2E = [f"tests/e2e/test_loop_{n}.py::test_loop" for n in range(10)]
INTEGRATION = [f"tests/integration/test_part_{n}.py::test_part" for n in range(20)]


def test_while_end_to_end_units_wait_only_the_end_to_end_workers_take_work() -> None:
    collection = E2E + INTEGRATION
    _scheduling, nodes = _scheduled(collection, workers=6, busy=4)

    assert [len(node.sent) for node in nodes] == [2, 2, 2, 2, 0, 0]
    first = [collection[node.sent[0]] for node in nodes[:4]]
    assert first == E2E[:4]  # in collection order


def test_once_the_last_end_to_end_unit_is_out_the_waiting_workers_take_two_each() -> None:
    collection = E2E + INTEGRATION
    scheduling, nodes = _scheduled(collection, workers=6, busy=4)
    done: dict[str, int] = {}
    _finish_first(scheduling, nodes[0], done)  # gw0 takes the next unit: an e2e one
    assert not nodes[4].sent

    _finish_first(scheduling, nodes[1], done)  # gw1 takes the last end-to-end unit
    assert collection[nodes[1].sent[-1]] == E2E[-1]

    waiting = [test for unit in scheduling.workqueue.values() for test in unit]
    assert not any(test in E2E for test in waiting)
    assert [len(node.sent) for node in nodes[4:]] == [2, 2]
    assert all(collection[index] in INTEGRATION for index in nodes[4].sent + nodes[5].sent)


def test_without_end_to_end_units_every_worker_takes_work_from_the_start() -> None:
    _scheduling, nodes = _scheduled(INTEGRATION, workers=6, busy=4)
    assert [len(node.sent) for node in nodes] == [2] * 6
