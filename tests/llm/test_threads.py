"""The torch thread count is the settings' (the machine's cores unless configured; the cores
that other processes leave free, not a burst, when asked), and a backend's numbers do not
follow the count earlier work left."""

from __future__ import annotations

import contextvars
import threading

import pytest
import torch
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import WhitespaceSplit
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from stackelberg.llm.local import LocalBackend, threads


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
    assert threads.set_threads(0) == 2  # 0: the free cores
    assert torch.get_num_threads() == 2
    assert left == [1.0]  # the quiet window ended the sampling


def test_a_core_busy_in_every_window_is_left_alone(monkeypatch):
    left = _windows(monkeypatch, [1.0, 0.9, 1.0])
    threads.set_threads(0)
    assert torch.get_num_threads() == 1
    assert left == []


def test_a_configured_count_is_taken_as_given(monkeypatch):
    _windows(monkeypatch, [2.0, 2.0, 2.0])
    threads.set_threads(2)
    assert torch.get_num_threads() == 2


def test_without_a_configured_count_the_machines_cores_however_busy_the_machine(monkeypatch):
    left = _windows(monkeypatch, [3.0, 3.0, 3.0])  # every core busy elsewhere
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1, 2})
    assert threads.set_threads(None) == 3
    assert torch.get_num_threads() == 3
    assert left == [3.0, 3.0, 3.0]  # the load is not even looked at
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert threads.set_threads(None) == 2


def _checkpoint(folder) -> None:
    """A two-layer float32 Llama with a word-level tokenizer: a checkpoint in milliseconds."""
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=16, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
    )  # fmt: skip
    LlamaForCausalLM(config).to(torch.float32).save_pretrained(folder)
    words = Tokenizer(WordLevel({f"w{i}": i for i in range(16)}, unk_token="w0"))
    words.pre_tokenizer = WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=words).save_pretrained(folder)


def test_a_backend_computes_on_its_own_count_whatever_earlier_work_left(tmp_path, monkeypatch):
    # torch's float32 kernels give other numbers on another thread count, and in one process
    # an earlier stage, another backend or a lane may leave torch on another count: the
    # evaluate stage's held-out candidates of a pipeline run were not those of the same
    # stage run alone.
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    monkeypatch.setenv("STACKELBERG_CACHE_DIR", str(tmp_path / "cache"))
    _checkpoint(tmp_path / "ckpt")
    # no response cache: every call computes; both backends run one loaded copy
    backends = {n: LocalBackend(str(tmp_path / "ckpt"), threads=n) for n in (None, 2)}
    counts: list[int] = []
    decoder = backends[None].lm.base_model  # what the backend runs (hf_internals.DecoderCall)
    decoder.register_forward_pre_hook(lambda *_: counts.append(torch.get_num_threads()))
    seen: dict[int | None, set[int]] = {}
    for left in (2, 1, 3):
        for configured, llm in backends.items():
            torch.set_num_threads(left)
            counts.clear()
            llm.generate(["w1 w2 w3"], n=2, seed=0, max_new_tokens=3)
            llm.score_nested("w1 w2", [" w3"], [" w4"])
            seen.setdefault(configured, set()).update(counts)
    assert seen == {None: {3}, 2: {2}}  # the machine's cores unless configured


def test_a_background_lane_and_its_caller_keep_their_shares_until_the_lane_ends():
    torch.set_num_threads(2)
    caller_done = threading.Event()
    seen = []

    def work(x):
        seen.append(torch.get_num_threads())
        caller_done.wait(timeout=60)
        threads.pace(2)  # as a backend of two threads does before each forward pass
        seen.append(torch.get_num_threads())
        return x + 1

    with threads.BackgroundLane(work, 41) as lane:
        assert torch.get_num_threads() == 1
    caller_done.set()
    assert lane.join() == 42
    # one thread beside the caller, still one once the caller was done: the count does not
    # depend on which side finished first
    assert seen == [1, 1]
    assert torch.get_num_threads() == 2


def test_the_caller_keeps_its_share_until_the_lane_is_joined():
    torch.set_num_threads(2)
    with threads.BackgroundLane(lambda: "scored") as lane:
        lane._thread.join()  # the lane has ended
        threads.pace(2)
        assert torch.get_num_threads() == 1
    assert lane.join() == "scored"
    assert torch.get_num_threads() == 2
    threads.pace()  # outside a lane, no count given: nothing changes
    assert torch.get_num_threads() == 2
    threads.pace(1)  # a backend's count
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
