"""Real runs through the fake harness (``target/debug/fake-harness``, a real process replaying a
golden trace): the Python mirror of cli/tests/runner.rs, plus what only the binding does —
handler dispatch (sync and async, exceptions), streams, the sync variants, error mapping."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import logging
import threading
import time
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

import agentstream
from agentstream import AgentConfig, Evolve, Limits, RunResult
from conftest import GOLDEN, GoldenCase, read_jsonl

T = TypeVar("T")
TERMINAL_REASONS = {"run_complete", "run_failed", "run_interrupted", "command_complete", "command_failed",
                    "command_interrupted", "run_background_complete", "run_background_failed",
                    "command_background_complete", "command_background_failed"}
TERMINAL_HOOKS = {"run.completed", "run.failed", "run.cancelled", "run.stopped"}


def go(coro: Awaitable[T], timeout: float = 60) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coro, timeout)
    return asyncio.run(bounded())


def fake(fake_harness: Path, agent: str = "claude", case: str | None = "s1-text", **env: str) -> Evolve:
    variables = {f"AGENTSTREAM_FAKE_{k.upper()}": v for k, v in env.items()}
    if case is not None:
        variables["AGENTSTREAM_FAKE_TRACE"] = str(GOLDEN / agent / case)
    return Evolve(config=AgentConfig(type=agent, bin=fake_harness, env=variables))


class Recorder:
    """Every delivery in order: (channel, payload)."""

    def __init__(self, evolve: Evolve | None = None) -> None:
        self.log: list[tuple[str, Any]] = []
        if evolve is not None:
            for ch in ("content", "lifecycle", "stdout", "stderr"):
                evolve.on(ch, self.handler(ch))  # type: ignore[call-overload]

    def handler(self, channel: str) -> Callable[[Any], None]:
        def record(payload: Any) -> None:
            self.log.append((channel, payload))
        record.__qualname__ = f"record_{channel}"
        return record

    def on_event(self, hook: Any) -> None:
        self.log.append(("hook", hook))

    def of(self, channel: str) -> list[Any]:
        return [p for c, p in self.log if c == channel]

    def reasons(self) -> list[str]:
        return [p["reason"] for p in self.of("lifecycle")]

    def hook_types(self) -> list[str]:
        return [p["type"] for p in self.of("hook")]


def assert_one_terminal_last(rec: Recorder, result: RunResult) -> None:
    reasons = rec.reasons()
    assert sum(r in TERMINAL_REASONS for r in reasons) == 1, reasons
    assert reasons[-1] in TERMINAL_REASONS
    # No delivery after the terminal one except the hooks derived from it.
    last_lifecycle = max(i for i, (c, _) in enumerate(rec.log) if c == "lifecycle")
    assert all(c == "hook" for c, _ in rec.log[last_lifecycle + 1 :])
    hooks = rec.hook_types()
    if hooks:
        assert hooks[0] == "run.started"
        assert sum(h in TERMINAL_HOOKS for h in hooks) == 1 and hooks[-1] in TERMINAL_HOOKS
        seqs = [p["sequence"] for p in rec.of("hook")]
        assert seqs == sorted(seqs)
        assert rec.of("hook")[-1]["sequence"] == result.last_sequence


def assert_gapless(envelopes: list[dict[str, Any]]) -> None:
    expected = 0
    for e in envelopes:
        assert e["sequence"] == expected, (e["sequence"], expected)
        expected = e["sequence"] + e.get("coalesced", 0) + 1
    terminals = [e for e in envelopes if e["channel"] == "lifecycle" and e["event"]["reason"] in TERMINAL_REASONS]
    assert len(terminals) == 1 and terminals[0] is envelopes[-1]


# -------------------------------------------------------------------------------------------------
# A whole run
# -------------------------------------------------------------------------------------------------


def test_a_run_streams_every_channel_in_order(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "claude", "s2-bash")
    rec = Recorder(evolve)
    result = go(evolve.run(prompt="List the files", on_event=rec.on_event))
    assert isinstance(result, RunResult)
    assert result.state == "completed" and result.ok, result
    assert result.exit_code == 0 and result.signal is None
    assert result.session_id == "66c0abf3-0bc5-46a7-8e73-4fef192280ea"
    assert result.final_text and "README.md" in result.final_text
    assert result.usage["promptTokens"] > 0
    assert result.handler_errors == 0
    # A session's first operation announces the environment first.
    assert rec.reasons()[:2] == ["sandbox_ready", "run_start"] and rec.reasons()[-1] == "run_complete"
    assert_one_terminal_last(rec, result)
    case = GOLDEN / "claude" / "s2-bash"
    assert rec.of("content") == read_jsonl(case.with_name("s2-bash.expected.jsonl"))
    assert "".join(rec.of("stdout")) == case.with_name("s2-bash.input.jsonl").read_text()
    assert "".join(rec.of("stderr")) == case.with_name("s2-bash.stderr.txt").read_text()
    # Each content event comes right after the stdout line it was decoded from.
    previous = None
    for channel, _ in rec.log:
        if channel == "content":
            assert previous in ("stdout", "content", "hook")
        if channel != "hook":
            previous = channel
    hooks = rec.hook_types()
    assert hooks[0] == "run.started" and hooks[-1] == "run.completed" and "tool.started" in hooks
    for hook in rec.of("hook"):
        assert tuple(hook)[:6] == ("type", "run_id", "agent_id", "timestamp", "status", "sequence")
        assert hook["run_id"] == result.run_id and hook["agent_id"] == "claude"
    lifecycle = rec.of("lifecycle")[0]
    assert set(lifecycle) == {"sandbox_id", "sandbox", "agent", "timestamp", "reason"}
    assert lifecycle["sandbox_id"] is None


def test_every_capture_through_a_real_run_gives_the_golden_content(fake_harness: Path, capture: GoldenCase) -> None:
    evolve = fake(fake_harness, capture.agent, capture.name)
    contents: list[Any] = []
    evolve.on("content", contents.append)
    result = evolve.run_sync(prompt="x")
    assert contents == capture.expected()
    meta = capture.prefix.with_name(f"{capture.name}.meta.json")
    assert result.state in ("completed", "failed")
    assert result.stats["bytes"] == len(capture.input()), meta


def test_hooks_of_a_real_run_match_the_golden_replay(fake_harness: Path) -> None:
    """The same derivation live and replayed: identical hooks but for run id, timestamp and
    the sequence numbers (a real process also prints stderr)."""
    evolve = fake(fake_harness, "claude", "s3-read-edit", exit="0")
    hooks: list[dict[str, Any]] = []
    evolve.run_sync(prompt="x", on_event=hooks.append)
    golden = agentstream.replay("claude", (GOLDEN / "claude" / "s3-read-edit.input.jsonl").read_bytes()).hooks
    strip = lambda h: {k: v for k, v in h.items() if k not in ("run_id", "timestamp", "sequence", "last_sequence")}  # noqa: E731
    assert [strip(h) for h in hooks] == [strip(h) for h in golden]


def test_the_stream_iterator_yields_every_envelope_gapless(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "codex", "s2-bash")
    rec = Recorder(evolve)

    async def main() -> tuple[list[Any], RunResult]:
        envelopes = []
        async with evolve.stream(prompt="x", on_event=rec.on_event) as stream:
            async for envelope in stream:
                envelopes.append(envelope)
                assert set(stream.pressure) >= {"buffered", "bytes", "peak", "coalesced", "stalled"}
        return envelopes, await stream

    envelopes, result = go(main())
    assert result.state == "completed"
    assert_gapless(envelopes)
    for e in envelopes:
        assert set(e) <= {"run_id", "sequence", "channel", "event", "coalesced"}
        assert e["run_id"] == result.run_id
    # The handlers got exactly what the iterator yielded, in the same order.
    assert [p for c, p in rec.log if c != "hook"] == [e["event"] for e in envelopes]
    assert [e["event"] for e in envelopes if e["channel"] == "content"] == read_jsonl(
        GOLDEN / "codex" / "s2-bash.expected.jsonl")
    assert_one_terminal_last(rec, result)


def test_await_stream_without_iterating_drains_it(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "gemini", "s1-text")
    rec = Recorder(evolve)
    result = go(evolve.stream(prompt="x", on_event=rec.on_event))  # type: ignore[arg-type]
    assert result.state == "completed"
    assert rec.reasons()[-1] == "run_complete"
    assert_one_terminal_last(rec, result)
    # Await-only: no handler at all, nothing is read (items are numbered and discarded).
    bare = fake(fake_harness, "gemini", "s1-text")
    result = go(bare.run(prompt="x"))
    assert result.state == "completed" and result.final_text


def test_sync_variants(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "qwen", "s2-bash")
    rec = Recorder(evolve)
    result = evolve.run_sync(prompt="x", on_event=rec.on_event)
    assert result.state == "completed"
    assert_one_terminal_last(rec, result)
    with evolve.stream_sync(prompt="x") as stream:
        envelopes = list(stream)
    assert_gapless(envelopes)
    assert stream.wait().state == "completed"
    result = evolve.execute_command_sync("echo hi; echo err >&2")
    assert result.state == "completed"


# -------------------------------------------------------------------------------------------------
# How runs end
# -------------------------------------------------------------------------------------------------


def test_a_non_zero_exit_returns_a_failed_result(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "codex", "s1-text", exit="3")
    rec = Recorder(evolve)
    result = go(evolve.run(prompt="x", on_event=rec.on_event))
    assert result.state == "failed" and not result.ok
    assert result.exit_code == 3
    assert result.error and "3" in result.error
    assert result.final_text is None, "partial text is never an answer"
    assert rec.reasons()[-1] == "run_failed"
    assert rec.hook_types()[-1] == "run.failed"
    assert_one_terminal_last(rec, result)


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini", "qwen", "opencode", "droid"])
def test_exit_0_without_the_final_result_fails_and_keeps_the_answer(fake_harness: Path, agent: str) -> None:
    """decisions.md §1: exit 0 is not success without the harness's end-of-run record."""
    evolve = fake(fake_harness, agent, "e-no-final-result", exit="0")
    rec = Recorder(evolve)
    result = go(evolve.run(prompt="x", on_event=rec.on_event))
    assert result.state == "failed" and not result.ok
    assert result.exit_code == 0
    assert result.error and "stopped without its final result" in result.error
    assert result.final_text, "the partial answer stays in the result"
    assert rec.reasons()[-1] == "run_failed"
    assert rec.hook_types()[-1] == "run.failed"
    assert_one_terminal_last(rec, result)


def test_a_harness_killed_mid_line_fails_after_its_partial_line(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "gemini", "s1-text", die_mid_line="1")
    rec = Recorder(evolve)
    result = go(evolve.run(prompt="x", on_event=rec.on_event))
    assert result.state == "failed"
    assert result.signal == 9
    assert rec.of("stdout")[-1].startswith('{"type":"result"'), "the partial line comes before the terminal"
    assert_one_terminal_last(rec, result)


def test_a_timeout_stops_the_run(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "claude", "s1-text", hang="1")
    rec = Recorder(evolve)
    started = time.monotonic()
    result = go(evolve.run(prompt="x", on_event=rec.on_event, timeout_ms=400, kill_grace_ms=200))
    assert time.monotonic() - started < 10
    assert result.state == "cancelled"
    assert result.cancel_kind == "timeout" and result.timed_out
    assert result.cancel_reason and "time limit" in result.cancel_reason
    assert rec.reasons()[-1] == "run_interrupted"
    assert rec.hook_types()[-1] == "run.stopped"
    assert_one_terminal_last(rec, result)


@pytest.mark.parametrize("ignore_sigterm", ["0", "1"])
def test_interrupt_terminates_and_escalates(fake_harness: Path, ignore_sigterm: str) -> None:
    evolve = fake(fake_harness, "claude", "s1-text", hang="1", ignore_sigterm=ignore_sigterm)
    rec = Recorder(evolve)

    async def main() -> RunResult:
        task = asyncio.create_task(evolve.run(prompt="x", on_event=rec.on_event, kill_grace_ms=300))
        while "run_start" not in rec.reasons():
            await asyncio.sleep(0.02)
        assert evolve.interrupt("the client pressed stop") is True
        evolve.interrupt("a second stop")  # a no-op (or nothing runs any more): the first reason stands
        return await task

    result = go(main())
    assert result.state == "cancelled" and result.cancel_kind == "caller"
    assert result.cancel_reason and "the client pressed stop" in result.cancel_reason
    assert result.signal == (9 if ignore_sigterm == "1" else 15)
    assert rec.hook_types()[-1] == "run.cancelled"
    assert_one_terminal_last(rec, result)


def test_breaking_out_of_the_stream_cancels_the_run(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "claude", "s1-text", hang="1")
    rec = Recorder(evolve)

    async def main() -> tuple[list[Any], RunResult]:
        seen = []
        async with evolve.stream(prompt="x", on_event=rec.on_event, kill_grace_ms=200) as stream:
            async for envelope in stream:
                seen.append(envelope)
                if envelope["channel"] == "content":
                    break
        assert stream.result is not None, "leaving the block waits for the end"
        return seen, await stream

    seen, result = go(main())
    assert seen[-1]["channel"] == "content"
    assert result.state == "cancelled" and result.cancel_kind == "reader_left", result
    assert evolve.active_run_id is None
    # The handlers still got the rest, the one terminal included.
    assert rec.reasons()[-1] == "run_interrupted"
    assert rec.hook_types()[-1] == "run.cancelled"
    assert_one_terminal_last(rec, result)


def test_breaking_out_of_a_sync_stream_cancels_the_run(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "claude", "s1-text", hang="1")
    with evolve.stream_sync(prompt="x", kill_grace_ms=200) as stream:
        for envelope in stream:
            if envelope["channel"] == "stdout":
                break
    result = stream.wait()
    assert result.state == "cancelled" and result.cancel_kind == "reader_left"


def test_cancelling_a_stream_ends_it_with_the_terminal_and_the_reason(fake_harness: Path) -> None:
    # Both kinds of stream: cancel() mid-read, the iterator goes on to the one terminal.
    evolve = fake(fake_harness, "claude", "s1-text", hang="1")
    with evolve.stream_sync(prompt="x", kill_grace_ms=200) as sync_stream:
        channels = []
        for envelope in sync_stream:
            channels.append(envelope["channel"])
            if len(channels) == 1:
                assert sync_stream.pressure["peak"] >= sync_stream.pressure["buffered"]
                sync_stream.cancel("enough")
    result = sync_stream.result
    assert channels[-1] == "lifecycle" and result.state == "cancelled"
    assert result.cancel_kind == "caller" and result.cancel_reason is not None and "enough" in result.cancel_reason

    async def main() -> RunResult:
        async with evolve.stream(prompt="x", kill_grace_ms=200) as stream:
            async for _ in stream:
                stream.cancel("enough async")
        return await stream

    result = go(main())
    assert result.cancel_kind == "caller" and result.cancel_reason is not None and "enough async" in result.cancel_reason


def test_a_background_run_outlives_an_awaiter_that_gave_up_and_can_be_cancelled(fake_harness: Path) -> None:
    # An awaiter's timeout must not cancel the handle's result (every other awaiter's, and
    # aclose()'s): the run goes on, and cancel() ends it with its reason.
    async def main() -> RunResult:
        async with fake(fake_harness, "claude", "s1-text", hang="1") as evolve:
            handle = await evolve.run("x", background=True, kill_grace_ms=200)
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(handle, 0.2)
            assert not handle.done() and evolve.active_run_id == handle.run_id
            assert handle.pressure["peak"] >= handle.pressure["buffered"] >= 0
            handle.cancel("stop it")
            return await handle

    result = go(main())
    assert result.state == "cancelled" and result.cancel_kind == "caller"
    assert result.cancel_reason is not None and "stop it" in result.cancel_reason


def test_cancelling_the_awaiting_task_cancels_the_run(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "claude", "s1-text", hang="1")
    rec = Recorder(evolve)

    async def main() -> None:
        task = asyncio.create_task(evolve.run(prompt="x", kill_grace_ms=200))
        while "run_start" not in rec.reasons():
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        deadline = time.monotonic() + 10
        while evolve.active_run_id is not None:
            assert time.monotonic() < deadline, "the run did not end"
            await asyncio.sleep(0.05)

    go(main())
    # The session is free again.
    assert go(fake(fake_harness, "claude", "s1-text").run(prompt="x")).state == "completed"


def test_a_run_timed_out_by_asyncio_frees_the_evolve_for_the_next_run(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "claude", "s1-text", hang="1")

    async def main() -> RunResult:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(evolve.run(prompt="x", kill_grace_ms=200), 0.5)
        # At once, on the same Evolve: the timed-out run has ended (it raised AlreadyRunningError).
        assert evolve.active_run_id is None
        return await evolve.run(prompt="x", env={"AGENTSTREAM_FAKE_HANG": "0"})

    assert go(main()).state == "completed"


def test_kill_and_already_running(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "claude", "s1-text", hang="1")
    rec = Recorder(evolve)

    async def main() -> RunResult:
        task = asyncio.create_task(evolve.run(prompt="x"))
        while "run_start" not in rec.reasons():
            await asyncio.sleep(0.02)
        assert evolve.active_run_id is not None
        with pytest.raises(agentstream.AlreadyRunningError) as info:
            await evolve.run(prompt="y")
        assert isinstance(info.value, RuntimeError)
        assert "already running" in str(info.value) and info.value.code == 1002
        with pytest.raises(agentstream.AlreadyRunningError):
            evolve.run_sync(prompt="y")
        with pytest.raises(agentstream.AlreadyRunningError):
            async with evolve.stream(prompt="y"):
                pass
        assert evolve.kill() is True
        return await task

    result = go(main())
    assert result.state == "cancelled"
    assert "sandbox_killed" in rec.reasons()
    assert_one_terminal_last(rec, result)
    assert evolve.kill() is False  # idle: nothing to kill
    assert evolve.interrupt() is False
    with pytest.raises(agentstream.NotRunningError):
        evolve.pause()


def test_a_missing_harness_raises_at_the_edge(tmp_path: Path) -> None:
    evolve = Evolve(config=AgentConfig(type="codex", bin=tmp_path / "codex-not-installed"))
    with pytest.raises(agentstream.HarnessNotFoundError) as info:
        go(evolve.run(prompt="x"))
    assert isinstance(info.value, FileNotFoundError)
    assert info.value.kind == "harness_not_found" and info.value.code == 1001
    assert "not found" in str(info.value) and "bin" in str(info.value)
    with pytest.raises(agentstream.HarnessNotFoundError):
        evolve.run_sync(prompt="x")

    async def stream() -> None:
        async with evolve.stream(prompt="x"):
            pass

    with pytest.raises(agentstream.HarnessNotFoundError):
        go(stream())
    with pytest.raises(agentstream.HarnessNotFoundError):
        evolve.execute_command_sync(["/nonexistent/tool"])
    assert evolve.active_run_id is None


def test_bad_options_raise_invalid_argument(fake_harness: Path) -> None:
    evolve = fake(fake_harness)
    with pytest.raises(agentstream.InvalidArgumentError, match="^timeout_ms must be"):
        evolve.run_sync(prompt="x", timeout_ms=-1)
    with pytest.raises(agentstream.InvalidArgumentError, match="^timeout_ms must be .* got 0 "):
        evolve.run_sync(prompt="x", timeout_ms=0)
    with pytest.raises(agentstream.InvalidArgumentError, match="^limits.byte_budget must be greater than 0"):
        evolve.run_sync(prompt="x", limits=Limits(byte_budget=0))
    with pytest.raises(agentstream.InvalidArgumentError, match="^limits.stall_ms must be"):
        evolve.run_sync(prompt="x", limits=Limits(stall_ms=float("nan")))
    with pytest.raises(agentstream.InvalidArgumentError, match="^limits.high_water must be a whole number"):
        evolve.run_sync(prompt="x", limits=Limits(high_water=-3))
    with pytest.raises(agentstream.InvalidArgumentError, match="^env has an invalid variable name"):
        evolve.run_sync(prompt="x", env={"A=B": "1"})
    with pytest.raises(agentstream.InvalidArgumentError, match="^resume must not start with '-'"):
        evolve.run_sync(prompt="x", resume="-x")
    with pytest.raises(TypeError):
        evolve.run_sync(prompt="x", timeout_ms="soon")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="timeout"):
        evolve.run_sync(prompt="x", timeout=5)  # type: ignore[call-overload]  # seconds are gone
    with pytest.raises(TypeError):
        evolve.run_sync(prompt="x", limits={"high_water": 1})  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        evolve.run_sync(prompt=["x"])  # type: ignore[arg-type]
    with pytest.raises(agentstream.InvalidArgumentError, match="^command must not be blank"):
        evolve.execute_command_sync("   ")
    with pytest.raises(agentstream.InvalidArgumentError, match="^command must not be empty"):
        evolve.execute_command_sync([])
    with pytest.raises(TypeError):
        evolve.run_sync(prompt="x", on_event=42)  # type: ignore[arg-type]
    assert evolve.active_run_id is None


def test_every_runner_error_kind_maps_to_its_class() -> None:
    for kind, (code, _) in agentstream._native.ERROR_KINDS.items():
        with pytest.raises(agentstream.AgentstreamError) as info:
            agentstream._native._raise_error_kind(kind, "boom")
        assert info.value.kind == kind and info.value.code == code
        assert str(info.value).startswith("boom")


# -------------------------------------------------------------------------------------------------
# Handlers
# -------------------------------------------------------------------------------------------------


def test_a_raising_handler_is_logged_once_per_handler_and_counted(
        fake_harness: Path, caplog: pytest.LogCaptureFixture) -> None:
    evolve = fake(fake_harness, "claude", "s2-bash")
    calls: list[int] = []

    def flaky(event: Any) -> None:
        calls.append(1)
        if len(calls) % 2 == 0:
            raise RuntimeError(f"bad event {len(calls)}")

    def bad_hook(hook: Any) -> None:
        if hook["type"] in ("tool.started", "tool.completed"):
            raise KeyError("nope")

    after: list[Any] = []
    evolve.on("content", flaky).on("content", after.append)
    with caplog.at_level(logging.ERROR, logger="agentstream"):
        result = go(evolve.run(prompt="x", on_event=bad_hook))
    assert result.state == "completed"
    n_content = len(read_jsonl(GOLDEN / "claude" / "s2-bash.expected.jsonl"))
    assert len(calls) == n_content and len(after) == n_content, "every handler still gets every event"
    hook_failures = 2  # s2-bash has one tool call: started and completed
    assert result.handler_errors == n_content // 2 + hook_failures, "the core counts every failure"
    records = [r for r in caplog.records if r.name == "agentstream"]
    assert len(records) == 2, "one report per failing handler, not per failure"
    content, hook = records
    assert content.levelno == logging.ERROR and "on('content') handler" in content.getMessage()
    assert "flaky" in content.getMessage() and "RuntimeError: bad event 2" in content.getMessage()
    assert content.exc_info is not None and content.exc_info[0] is RuntimeError
    assert "raise RuntimeError" in caplog.text, "the traceback is logged"
    assert content.agentstream_channel == "content"  # type: ignore[attr-defined]
    assert content.agentstream_run_id == result.run_id  # type: ignore[attr-defined]
    assert "update" in content.agentstream_event  # type: ignore[attr-defined]
    assert hook.agentstream_event["type"] == "tool.started"  # type: ignore[attr-defined]
    assert "on_event handler" in hook.getMessage() and hook.exc_info[0] is KeyError  # type: ignore[index]
    # A second run reports again (once per handler and run).
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="agentstream"):
        again = evolve.run_sync(prompt="x", on_event=bad_hook)
    assert again.handler_errors > 0 and len([r for r in caplog.records if r.name == "agentstream"]) == 2


class Unprintable(Exception):
    def __str__(self) -> str:
        raise ValueError("no message for you")


@pytest.mark.parametrize(("failure", "reported"), [
    # Formatting the message raised in the report, which cancelled the run.
    (Unprintable(), "Unprintable (its message could not be read: ValueError)"),
    # What os.listdir() gives for a file name that is not UTF-8: the report raised
    # UnicodeEncodeError on its way to the native library, which cancelled the run.
    (ValueError("cannot open " + b"caf\xe9".decode("utf-8", "surrogateescape")), "cannot open caf"),
])
def test_an_exception_whose_message_cannot_be_read_or_sent_is_counted_and_the_run_goes_on(
        fake_harness: Path, caplog: pytest.LogCaptureFixture, failure: Exception, reported: str) -> None:
    def handler(event: Any) -> None:
        raise failure

    evolve = fake(fake_harness, "claude", "s2-bash")
    evolve.on("content", handler)
    with caplog.at_level(logging.ERROR, logger="agentstream"):
        result = evolve.run_sync(prompt="x")
    assert result.state == "completed", result
    n_content = len(read_jsonl(GOLDEN / "claude" / "s2-bash.expected.jsonl"))
    assert result.handler_errors == n_content
    assert reported in caplog.text


def test_async_handlers_are_awaited_in_order(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "claude", "s2-bash")
    order: list[tuple[str, int]] = []
    expected_count = len(read_jsonl(GOLDEN / "claude" / "s2-bash.expected.jsonl"))

    async def slow_content(event: Any) -> None:
        order.append(("async-start", len(order)))
        await asyncio.sleep(0.01)
        order.append(("async-end", len(order)))

    def sync_content(event: Any) -> None:
        order.append(("sync", len(order)))

    class CallableObject:
        async def __call__(self, event: Any) -> None:
            await asyncio.sleep(0)
            order.append(("object", len(order)))

    hooks: list[str] = []

    async def on_event(hook: Any) -> None:
        await asyncio.sleep(0)
        hooks.append(hook["type"])

    evolve.on("content", slow_content).on("content", sync_content).on("content", CallableObject())
    result = go(evolve.run(prompt="x", on_event=on_event))
    assert result.state == "completed" and result.handler_errors == 0
    names = [n for n, _ in order]
    assert names == ["async-start", "async-end", "sync", "object"] * expected_count
    assert hooks[0] == "run.started" and hooks[-1] == "run.completed"
    # The same in the blocking variant (async handlers run on a private loop there).
    order.clear()
    hooks.clear()
    assert evolve.run_sync(prompt="x", on_event=on_event).state == "completed"
    assert [n for n, _ in order] == ["async-start", "async-end", "sync", "object"] * expected_count
    assert hooks[-1] == "run.completed"


def test_a_handler_added_during_a_run_gets_the_rest(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "gemini", "s2-bash", delay_ms="30")
    late: list[Any] = []

    def first(event: Any) -> None:
        if event["reason"] == "run_start":
            evolve.on("stdout", late.append)

    evolve.on("lifecycle", first)
    assert evolve.run_sync(prompt="x").state == "completed"
    assert late and "".join(late) in (GOLDEN / "gemini" / "s2-bash.input.jsonl").read_text()


def test_pause_and_resume_stop_and_continue_the_process(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "gemini", "s2-bash", delay_ms="60")
    stamps: list[tuple[float, str]] = []
    evolve.on("stdout", lambda line: stamps.append((time.monotonic(), "stdout")))
    rec = Recorder(evolve)
    window: dict[str, float] = {}

    async def main() -> RunResult:
        task = asyncio.create_task(evolve.run(prompt="x"))
        await asyncio.sleep(0.15)
        await evolve.pause()
        evolve.pause()  # already paused: a no-op
        window["quiet_from"] = time.monotonic() + 0.1  # what was already in the pipe may still arrive
        await asyncio.sleep(0.5)
        window["quiet_to"] = time.monotonic()
        await evolve.resume()
        return await task

    result = go(main())
    assert result.state == "completed"
    reasons = rec.reasons()
    assert reasons.count("sandbox_pause") == 1 and reasons.count("sandbox_resume") == 1, reasons
    assert reasons.index("sandbox_pause") < reasons.index("sandbox_resume")
    during = [t for t, _ in stamps if window["quiet_from"] <= t <= window["quiet_to"]]
    assert not during, "no output while paused"
    assert "".join(rec.of("stdout")) == (GOLDEN / "gemini" / "s2-bash.input.jsonl").read_text()
    assert_one_terminal_last(rec, result)


def test_the_gil_is_released_while_waiting(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "claude", "s1-text", hang="1")
    evolve.on("content", lambda e: None)
    ticks = 0
    stop = threading.Event()

    def spin() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    t = threading.Thread(target=spin)
    t.start()
    try:
        result = evolve.run_sync(prompt="x", timeout_ms=600, kill_grace_ms=200)
    finally:
        stop.set()
        t.join()
    assert result.timed_out
    assert ticks > 100, ticks


# -------------------------------------------------------------------------------------------------
# Backpressure and commands
# -------------------------------------------------------------------------------------------------


def test_a_flood_into_a_slow_reader_coalesces_without_losing_a_character(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "claude", "s1-text", flood="20000")
    chunks: list[str] = []
    first = True

    def slow(text: str) -> None:
        nonlocal first
        if first:
            first = False
            time.sleep(0.5)  # let the flood pile up unread
        chunks.append(text)

    evolve.on("stdout", slow)
    envelopes: list[Any] = []

    async def main() -> RunResult:
        async with evolve.stream(prompt="x", limits=Limits(high_water=16)) as stream:
            async for envelope in stream:
                envelopes.append(envelope)
        return await stream

    result = go(main())
    assert result.state == "completed", result
    expected = (GOLDEN / "claude" / "s1-text.input.jsonl").read_text()
    expected += "".join(f'{{"type":"flood","n":{i}}}\n' for i in range(20000))
    assert "".join(chunks) == expected
    assert result.pressure["coalesced"] > 0
    assert any(e.get("coalesced", 0) > 0 for e in envelopes)
    assert_gapless(envelopes)


def test_execute_command_streams_with_command_lifecycle(fake_harness: Path) -> None:
    evolve = Evolve(config=AgentConfig(type="claude"))
    rec = Recorder(evolve)
    result = go(evolve.execute_command("echo one; echo oops >&2; printf 'two'; exit 4", on_event=rec.on_event))
    assert result.state == "failed" and result.exit_code == 4
    assert rec.reasons() == ["sandbox_ready", "command_start", "command_failed"]
    assert "".join(rec.of("stdout")) == "one\ntwo\n"
    assert "".join(rec.of("stderr")) == "oops\n"
    assert rec.of("content") == []
    assert rec.hook_types()[0] == "run.started" and rec.hook_types()[-1] == "run.failed"
    assert rec.of("hook")[0]["operation"] == "command"
    out: list[str] = []
    evolve.off("stdout").on("stdout", out.append)
    rec.log.clear()
    result = evolve.execute_command_sync(["sh", "-c", "pwd; echo $GREETING"], cwd="/tmp", env={"GREETING": "hi"})
    assert result.state == "completed" and result.final_text is None
    assert "".join(out) == "/tmp\nhi\n"
    assert rec.reasons() == ["command_start", "command_complete"], "sandbox_ready only once per session"


def test_runs_work_in_a_forked_child(fake_harness: Path) -> None:
    """multiprocessing forks by default on Linux: the child inherits the runner's runtime and the
    reader pool without their threads; both are rebuilt there."""
    import os
    import signal

    evolve = fake(fake_harness, "codex", "s1-text")
    evolve.on("content", lambda e: None)
    assert evolve.run_sync(prompt="x").ok
    assert go(evolve.run(prompt="x")).ok  # the parent's reader pool has threads now
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork() of a multi-threaded process
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            signal.alarm(20)
            child = fake(fake_harness, "codex", "s1-text")
            child.on("content", lambda e: None)
            if child.run_sync(prompt="x").ok and asyncio.run(child.run(prompt="x")).ok:
                code = 0
        finally:
            os._exit(code)
    deadline = time.monotonic() + 30
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("a run in the forked child never ended")
        time.sleep(0.05)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


def test_handler_results_other_than_awaitables_are_ignored_and_the_next_handler_runs(fake_harness: Path) -> None:
    """The native dispatch loop hands a delivery back to Python when a handler returns
    something; Python finishes it (an awaitable is awaited, anything else ignored) and the
    handlers after it still run, in order, for every event."""
    evolve = fake(fake_harness, "claude", "s2-bash")
    calls: list[tuple[str, int]] = []

    def returns_a_value(event: Any) -> object:
        calls.append(("value", len(calls)))
        return {"not": "awaitable"}

    async def awaited(event: Any) -> None:
        calls.append(("async", len(calls)))

    evolve.on("content", returns_a_value).on("content", awaited).on("content", lambda e: calls.append(("last", 0)))
    for run in (lambda: evolve.run_sync(prompt="x"), lambda: asyncio.run(evolve.run(prompt="x"))):
        calls.clear()
        result = run()
        assert result.ok and result.handler_errors == 0
        n = len(read_jsonl(GOLDEN / "claude" / "s2-bash.expected.jsonl"))
        assert [c[0] for c in calls] == ["value", "async", "last"] * n


def test_a_base_exception_in_a_handler_stops_the_run(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "claude", "s2-bash", hang="1")

    def interrupt(event: Any) -> None:
        raise KeyboardInterrupt

    evolve.on("content", interrupt)
    with pytest.raises(KeyboardInterrupt):
        evolve.run_sync(prompt="x", kill_grace_ms=200)
    deadline = time.monotonic() + 10
    while evolve.active_run_id is not None:  # cancelled through the one path
        assert time.monotonic() < deadline
        time.sleep(0.05)


# -------------------------------------------------------------------------------------------------
# Background runs, the conversation, the scope of an Evolve
# -------------------------------------------------------------------------------------------------


def test_a_background_run_returns_at_once_and_its_handle_gives_the_result(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "gemini", "s2-bash", delay_ms="20")
    rec = Recorder(evolve)

    async def main() -> tuple[agentstream.BackgroundRun, RunResult]:
        handle = await evolve.run("x", background=True, on_event=rec.on_event)
        assert isinstance(handle, agentstream.BackgroundRun)
        assert not handle.done() and evolve.active_run_id == handle.run_id
        with pytest.raises(agentstream.BusyError, match="await"):
            handle.wait()  # from the loop that drives it: it would wait for itself
        return handle, await handle

    handle, result = go(main())
    assert handle.done() and result.run_id == handle.run_id
    assert result.state == "completed"
    assert rec.reasons()[-1] == "run_background_complete", "the core's background terminal"
    assert_one_terminal_last(rec, result)
    # From a script: a thread drives it; wait() blocks, a short wait says still running.
    handle = evolve.run_sync("x", background=True)
    with pytest.raises(agentstream.StillRunningError):
        handle.wait(timeout_ms=1)
    assert handle.wait(timeout_ms=30_000).state == "completed"
    assert go(asyncio.wait_for(_await(handle), 10)).state == "completed", "a finished handle can be awaited too"


async def _await(handle: agentstream.BackgroundRun) -> RunResult:
    return await handle


def test_a_run_that_waits_for_itself_from_its_own_handler_is_told_so(fake_harness: Path) -> None:
    # It would wait for ever: the run cannot end while its handler waits.
    for start in ("thread", "task"):
        evolve = fake(fake_harness, "claude", "s2-bash")
        handles: list[agentstream.BackgroundRun] = []
        errors: list[BaseException] = []
        known = threading.Event()  # the handle is known before the first delivery is handled

        def sync_handler(_: Any) -> None:
            known.wait(10)
            if handles and not errors:
                try:
                    handles[0].wait()
                except agentstream.BusyError as e:
                    errors.append(e)

        async def async_handler(_: Any) -> None:
            if handles and not errors:
                try:
                    await handles[0]
                except agentstream.BusyError as e:
                    errors.append(e)

        if start == "thread":
            evolve.on("content", sync_handler)
            handles.append(evolve.run_sync("x", background=True))
            known.set()
            result = handles[0].wait(timeout_ms=30_000)
        else:
            evolve.on("content", async_handler)

            async def main() -> RunResult:
                handles.append(await evolve.run("x", background=True))
                return await handles[0]

            result = go(main())
        assert result.state == "completed", start
        assert len(errors) == 1 and "own handler" in str(errors[0]), (start, errors)


def test_closing_a_stream_another_thread_or_task_reads_waits_for_that_reader(fake_harness: Path) -> None:
    # close() / aclose() from elsewhere: the reader's step ends (the run was cancelled), the
    # rest goes to the handlers once, and the reader's iteration ends without an error.
    evolve = fake(fake_harness, "claude", "s2-bash", delay_ms="100")
    rec = Recorder(evolve)
    stream = evolve.stream_sync("x", kill_grace_ms=200)
    errors: list[BaseException] = []

    def read() -> None:
        try:
            for _ in stream:
                pass
        except BaseException as e:  # noqa: BLE001 - the test reports it
            errors.append(e)

    reader = threading.Thread(target=read)
    reader.start()
    while not rec.log:
        time.sleep(0.01)
    stream.close()
    reader.join(30)
    assert not reader.is_alive() and errors == [], errors
    result = stream.result
    assert result.state == "cancelled" and result.cancel_kind == "reader_left"
    assert_one_terminal_last(rec, result)

    async def main() -> tuple[RunResult, list[BaseException]]:
        evolve2 = fake(fake_harness, "claude", "s2-bash", delay_ms="100")
        seen: list[BaseException] = []
        s2 = evolve2.stream("x", kill_grace_ms=200)

        read: list[Any] = []
        closed_at: list[int] = []

        async def read_async() -> None:
            try:
                async for envelope in s2:
                    read.append(envelope)
            except BaseException as e:  # noqa: BLE001 - the test reports it
                seen.append(e)

        task = asyncio.create_task(read_async())
        await asyncio.sleep(0.3)
        closing = asyncio.ensure_future(s2.aclose())
        await asyncio.sleep(0)
        closed_at.append(len(read))
        await closing
        await task
        # The reader's iteration ended at its next step: it did not read on to the terminal.
        assert len(read) <= closed_at[0] + 1, (len(read), closed_at)
        return await s2, seen

    result, seen = go(main())
    assert seen == [] and result.state == "cancelled", (seen, result)


@pytest.mark.parametrize("handler_kind", ["sync", "async"])
def test_closing_a_stream_from_its_own_handler_cancels_and_the_reader_gets_the_rest(
    fake_harness: Path, handler_kind: str
) -> None:
    evolve = fake(fake_harness, "claude", "s1-text", hang="1")
    rec = Recorder(evolve)
    with evolve.stream_sync("x", kill_grace_ms=200) as stream:

        async def close_async(_: Any) -> None:
            stream.close()  # in a task on the reader's thread: still the reader

        evolve.on("stdout", (lambda _: stream.close()) if handler_kind == "sync" else close_async)
        envelopes = list(stream)  # no deadlock: it only cancels
    assert envelopes[-1]["channel"] == "lifecycle"
    result = stream.result
    assert result.state == "cancelled"
    assert_one_terminal_last(rec, result)


def test_a_stream_has_one_reader_at_a_time(fake_harness: Path) -> None:
    # A second reader while the first is inside a handler is refused, not run beside it.
    evolve = fake(fake_harness, "claude", "s2-bash")
    refused: list[BaseException] = []

    def second_reader(stream: Any) -> None:
        try:
            next(stream)
        except RuntimeError as e:
            refused.append(e)

    def handler(_: Any) -> None:
        if not refused:
            t = threading.Thread(target=second_reader, args=(stream,))
            t.start()
            t.join()

    evolve.on("stdout", handler)
    with evolve.stream_sync("x") as stream:
        envelopes = list(stream)
    assert envelopes[-1]["channel"] == "lifecycle" and len(refused) == 1
    assert "one reader at a time" in str(refused[0])

    async def main() -> list[BaseException]:
        evolve2 = fake(fake_harness, "claude", "s2-bash")
        seen: list[BaseException] = []

        async def slow(_: Any) -> None:
            await asyncio.sleep(0.01)

        evolve2.on("lifecycle", slow)
        async with evolve2.stream("x") as s2:
            first = asyncio.ensure_future(s2.__anext__())
            await asyncio.sleep(0)  # the first reader is inside a handler now
            try:
                await s2.__anext__()
            except RuntimeError as e:
                seen.append(e)
            await first
            async for _ in s2:
                pass
        return seen

    assert len(go(main())) == 1


def test_run_sync_inside_a_running_event_loop_still_awaits_async_handlers(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "claude", "s2-bash")
    seen: list[str] = []

    async def handler(event: Any) -> None:
        await asyncio.sleep(0)
        seen.append(event["update"]["sessionUpdate"])

    evolve.on("content", handler)

    async def main() -> RunResult:
        # A blocking helper called from async code (or a notebook cell): run_sync blocks this loop.
        return evolve.run_sync("x")

    result = go(main())
    assert result.state == "completed" and result.handler_errors == 0, result
    assert seen and len(seen) == result.stats["events"], (seen, result.stats)


def test_an_async_handler_raising_system_exit_inside_a_running_loop_reaches_the_caller(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "claude", "s2-bash")

    async def handler(event: Any) -> None:
        await asyncio.sleep(0)
        raise SystemExit(3)

    evolve.on("content", handler)
    raised: list[BaseException] = []

    def caller() -> None:
        async def main() -> None:
            # run_sync inside a running loop: the async handler runs on a loop thread of its own.
            try:
                evolve.run_sync("x", kill_grace_ms=200)
            except BaseException as exc:
                raised.append(exc)

        asyncio.run(main())

    thread = threading.Thread(target=caller, daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive(), "run_sync still waits for a handler whose loop thread ended"
    assert len(raised) == 1 and isinstance(raised[0], SystemExit) and raised[0].code == 3, raised


def test_a_blocking_stream_dropped_inside_a_running_loop_ends_its_handler_thread(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "claude", "s2-bash")

    async def handler(event: Any) -> None:
        await asyncio.sleep(0)

    evolve.on("content", handler)
    threads: list[threading.Thread] = []

    async def main() -> None:
        # The async handlers of a blocking stream read inside a running loop run on a thread of
        # their own; the stream is dropped mid-way without close().
        stream = evolve.stream_sync("x")
        for envelope in stream:
            if envelope["channel"] == "content":
                break
        assert stream._op is not None
        thread = stream._op.dispatch.loop_thread()
        assert thread is not None and thread.is_alive()
        threads.append(thread)

    go(main())
    gc.collect()
    threads[0].join(timeout=10)
    assert not threads[0].is_alive(), "the dropped stream's handler thread ended"


def test_successive_runs_continue_the_conversation(fake_harness: Path, tmp_path: Path) -> None:
    argv_file = tmp_path / "argv.json"
    evolve = fake(fake_harness, "claude", "s2-bash", argv_file=str(argv_file))
    session = "66c0abf3-0bc5-46a7-8e73-4fef192280ea"
    hooks: list[str] = []
    first = evolve.run_sync("first", on_event=lambda h: hooks.append(h["type"]))
    assert first.session_id == session and evolve.get_session() == session
    resumes = lambda: [a for a in json.loads(argv_file.read_text()) if a.startswith("--resume")]  # noqa: E731
    assert resumes() == [] and hooks[0] == "run.started"
    hooks.clear()
    second = go(evolve.run("second", on_event=lambda h: hooks.append(h["type"])))
    assert resumes() == [f"--resume={session}"] and hooks[0] == "run.resumed"
    assert second.state == "completed" and evolve.status().last_status == "completed"
    evolve.set_session(None)
    evolve.run_sync("fresh")
    assert resumes() == []
    evolve.run_sync("elsewhere", resume="another-session", model="m-9")
    argv = json.loads(argv_file.read_text())
    assert resumes() == ["--resume=another-session"] and argv[argv.index("--model") + 1] == "m-9"


def test_leaving_an_evolve_block_kills_the_active_run(fake_harness: Path) -> None:
    async def main() -> RunResult:
        async with fake(fake_harness, "claude", "s1-text", hang="1") as evolve:
            handle = await evolve.run("x", background=True, kill_grace_ms=200)
            await asyncio.sleep(0.2)
            assert evolve.status().active_run_id == handle.run_id
        assert evolve.active_run_id is None, "the block waited for the run to end"
        return await handle

    result = go(main())
    assert result.state == "cancelled"
    with fake(fake_harness, "claude", "s1-text", hang="1") as evolve:
        handle = evolve.run_sync("x", background=True)
        time.sleep(0.2)
    assert handle.done() and handle.wait().state == "cancelled"
    assert evolve.status().agent_state != "running"


def test_an_abandoned_stream_cancels_its_run_when_collected(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "claude", "s1-text", hang="1")

    async def main() -> None:
        stream = evolve.stream("x", kill_grace_ms=200)
        async for _ in stream:
            break  # no `async with`: nothing closes the stream explicitly
        del stream
        gc.collect()
        deadline = time.monotonic() + 10
        while evolve.active_run_id is not None:
            assert time.monotonic() < deadline, "the abandoned run was not cancelled"
            await asyncio.sleep(0.05)

    go(main())
    assert evolve.status().last_status == "cancelled"


@pytest.mark.parametrize("mode", ["sync", "async", "async handlers"])
def test_a_handler_removed_by_an_earlier_one_is_not_called_again(mode: str) -> None:
    # 3,000 lines printed at once come in batches of hundreds: the removal lands mid-batch.
    evolve = Evolve(config=AgentConfig(type="claude"))
    every: list[str] = []
    seen: list[str] = []
    added: list[str] = []

    def counted(text: str) -> None:
        seen.append(text)

    def remover(text: str) -> None:
        every.append(text)
        if len(every) == 10:
            evolve.off("stdout", counted)
            evolve.on("stdout", added.append)

    async def remover_async(text: str) -> None:
        remover(text)

    evolve.on("stdout", remover_async if mode == "async handlers" else remover).on("stdout", counted)
    if mode == "sync":
        result = evolve.execute_command_sync("seq 1 3000")
    else:
        result = go(evolve.execute_command("seq 1 3000"))
    assert result.state == "completed", result
    assert "".join(every) == "".join(f"{i}\n" for i in range(1, 3001))
    assert seen == every[:9]
    # A handler added by a handler gets the run from the next delivery on.
    assert added == every[10:]


def test_a_child_forked_during_a_run_can_run_its_own() -> None:
    # The run going on belongs to the parent: the child's copy of the Evolve is not busy with it.
    import signal

    evolve = Evolve(config=AgentConfig(type="claude"))
    background = evolve.execute_command_sync("sleep 30", background=True, kill_grace_ms=100)
    assert evolve.active_run_id is not None
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status
        signal.alarm(30)
        ok = evolve.active_run_id is None
        result = evolve.execute_command_sync("echo child")
        os._exit(0 if ok and result.state == "completed" else 1)
    _, status = os.waitpid(pid, 0)
    evolve.interrupt()
    assert background.wait().state == "cancelled"
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_streams_result_is_still_running_until_its_terminal_envelope_was_yielded(fake_harness: Path) -> None:
    evolve = fake(fake_harness, "claude", "s1-text")
    stream = evolve.stream_sync(prompt="x")
    with pytest.raises(agentstream.StillRunningError):
        stream.result  # not started
    with stream:
        seen = []
        for envelope in stream:
            seen.append(envelope)
            if envelope["channel"] == "lifecycle" and envelope["event"]["reason"] == "run_complete":
                # The terminal was just yielded: the result is final now, inside the block.
                assert stream.result.state == "completed"
            elif len(seen) == 1:
                with pytest.raises(agentstream.StillRunningError):
                    stream.result
        assert stream.result.run_id == seen[-1]["run_id"]
    assert stream.wait() is stream.result or stream.wait() == stream.result

    async def main() -> RunResult:
        async with evolve.stream(prompt="x") as s:
            async for envelope in s:
                if envelope["sequence"] == 0:
                    with pytest.raises(agentstream.StillRunningError):
                        s.result
            return s.result

    assert go(main()).state == "completed"
