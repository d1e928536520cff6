"""The torch thread count follows cores that other processes keep busy, not a burst."""

from __future__ import annotations

import contextvars
import threading

import pytest
import torch

from stackelberg.llm.local import threads


@pytest.fixture(autouse=True)
def _keep_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def _windows(monkeypatch, busy: list[float]) -> list[float]:
    seen = list(busy)
    monkeypatch.setattr(threads, "_busy_elsewhere", lambda: seen.pop(0))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1})
    return seen


def test_a_burst_in_one_window_keeps_every_core(monkeypatch):
    left = _windows(monkeypatch, [1.0, 0.0, 1.0])
    threads.set_threads(None)
    assert torch.get_num_threads() == 2
    assert left == [1.0]  # the quiet window ended the sampling


def test_a_core_busy_in_every_window_is_left_alone(monkeypatch):
    left = _windows(monkeypatch, [1.0, 0.9, 1.0])
    threads.set_threads(None)
    assert torch.get_num_threads() == 1
    assert left == []


def test_a_configured_count_is_taken_as_given(monkeypatch):
    _windows(monkeypatch, [2.0, 2.0, 2.0])
    threads.set_threads(2)
    assert torch.get_num_threads() == 2


def test_busy_cores_elsewhere_leaves_out_this_process():
    # 100 ticks on 2 cores: 150 busy, 100 of them this process's: 0.5 cores elsewhere
    assert threads.busy_cores_elsewhere((0, 0, 0), (200, 150, 100), 2) == pytest.approx(0.5)


def test_a_background_lane_and_its_caller_share_the_threads_until_one_is_done():
    torch.set_num_threads(2)
    caller_done = threading.Event()
    seen = []

    def work(x):
        seen.append(torch.get_num_threads())
        caller_done.wait(timeout=60)
        threads.pace()  # as the local backend does before each forward pass
        seen.append(torch.get_num_threads())
        return x + 1

    with threads.BackgroundLane(work, 41) as lane:
        assert torch.get_num_threads() == 1
    caller_done.set()
    assert lane.join() == 42
    assert seen == [1, 2]  # one thread beside the caller, both once the caller was done
    assert torch.get_num_threads() == 2


def test_the_caller_gets_every_thread_once_the_lane_is_done():
    torch.set_num_threads(2)
    with threads.BackgroundLane(lambda: "scored") as lane:
        lane._thread.join()  # the lane has ended
        threads.pace()
        assert torch.get_num_threads() == 2
    assert lane.join() == "scored"
    threads.pace()  # outside a lane: nothing changes
    torch.set_num_threads(1)
    threads.pace()
    assert torch.get_num_threads() == 1


def test_a_background_lanes_error_is_raised_by_join():
    def work():
        raise ValueError("the Measurer failed")

    with threads.BackgroundLane(work) as lane:
        pass
    with pytest.raises(ValueError, match="the Measurer failed"):
        lane.join()


def test_a_failing_caller_waits_for_its_lane_so_that_a_retry_can_start_one():
    torch.set_num_threads(2)
    go = threading.Event()
    with pytest.raises(RuntimeError, match="a table failed"):
        with threads.BackgroundLane(go.wait, 60):
            go.set()
            raise RuntimeError("a table failed")
    assert torch.get_num_threads() == 2
    with threads.BackgroundLane(lambda: "again") as lane:
        pass
    assert lane.join() == "again"


def test_a_background_lane_carries_the_callers_context():
    run = contextvars.ContextVar("run", default=None)
    run.set("the stage's run")
    with threads.BackgroundLane(run.get) as lane:
        pass
    assert lane.join() == "the stage's run"


def test_lower_priority_work_is_not_busy_unless_this_process_is_niced_too():
    # user nice system idle iowait irq softirq steal
    line = "cpu  100 300 50 500 50 0 0 0\n"
    assert threads.cpu_ticks(line) == (1000, 150)  # the niced 300 ticks leave our cores free
    assert threads.cpu_ticks(line, own_niced=True) == (1000, 450)
