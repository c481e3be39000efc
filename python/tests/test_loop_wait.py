"""Waiting for deliveries under asyncio: on the event loop itself (``_native.Run.pull_or_arm``
and ``wake_fd``), with no thread in between, and nothing lost when a waiting task is cancelled."""

from __future__ import annotations

import asyncio
from typing import Any

from pathlib import Path

import pytest

from agentstream import AgentConfig, Evolve, _native, _run
from conftest import GOLDEN

# Lines a while apart, so that every pull finds nothing ready and waits.
SLOW_LINES = "for i in 1 2 3 4 5 6 7 8; do echo line$i; sleep 0.03; done"
EXPECTED = "".join(f"line{i}\n" for i in range(1, 9))


def no_pool() -> Any:
    raise AssertionError("a reader pool thread was asked to wait")


def test_an_asyncio_run_waits_on_the_loop_without_a_reader_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_run, "_pool", no_pool)
    evolve = Evolve(config=AgentConfig(type="claude"))
    out: list[str] = []
    evolve.on("stdout", out.append)
    result = asyncio.run(evolve.execute_command(SLOW_LINES))
    assert result.state == "completed", result
    assert "".join(out) == EXPECTED


def slow_fake(fake_harness: Path) -> Evolve:
    """The fake harness replaying a golden claude trace, 20 ms between lines."""
    env = {"AGENTSTREAM_FAKE_TRACE": str(GOLDEN / "claude" / "s1-text"), "AGENTSTREAM_FAKE_DELAY_MS": "20"}
    return Evolve(config=AgentConfig(type="claude", bin=fake_harness, env=env))


def test_a_stream_whose_waits_are_cancelled_loses_nothing(fake_harness: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_run, "_pool", no_pool)

    async def main(evolve: Evolve) -> tuple[list[dict[str, Any]], int]:
        got: list[dict[str, Any]] = []
        timeouts = 0
        async with evolve.stream("x") as stream:
            iterator = aiter(stream)
            while True:
                try:
                    got.append(await asyncio.wait_for(anext(iterator), 0.005))
                except asyncio.TimeoutError:
                    timeouts += 1  # the wait was cancelled mid-way: ask again
                except StopAsyncIteration:
                    return got, timeouts

    async def plainly(evolve: Evolve) -> list[dict[str, Any]]:
        async with evolve.stream("x") as stream:
            return [envelope async for envelope in stream]

    got, timeouts = asyncio.run(main(slow_fake(fake_harness)))
    expected = asyncio.run(plainly(slow_fake(fake_harness)))
    assert timeouts > 0, "no wait was cancelled: the test proves nothing"
    assert [e["sequence"] for e in got] == list(range(got[0]["sequence"], got[0]["sequence"] + len(got))), "gapless"
    assert got[-1]["channel"] == "lifecycle" and got[-1]["event"]["reason"] == "run_complete"
    content = [e["event"] for e in got if e["channel"] == "content"]
    assert content and content == [e["event"] for e in expected if e["channel"] == "content"]


def test_the_wake_descriptor_is_readable_once_an_armed_wait_should_be_asked_again() -> None:
    evolve = Evolve(config=AgentConfig(type="claude"))
    evolve.on("stdout", lambda text: None)  # the run keeps only channels someone reads

    async def main() -> list[str]:
        texts: list[str] = []
        op = evolve._start({"command": ["sh", "-c", "sleep 0.2; echo late"]}, None, "handlers")
        run: _native.Run = op.run
        fd = run.wake_fd
        assert run.wake_fd == fd, "one descriptor per run"
        armed = 0
        while not run.ended:
            batch = run.pull_or_arm()
            if batch is None:
                armed += 1
                assert await wait_readable(fd, 10), "an armed wait was never woken"
                continue
            texts.extend(payload for channel, payload, _, _ in batch if channel == "stdout")
        assert armed > 0, "the wait was never armed: the test proves nothing"
        return texts

    assert "".join(asyncio.run(main())) == "late\n"


async def wait_readable(fd: int, timeout: float) -> bool:
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    loop.add_reader(fd, lambda: ready.done() or ready.set_result(True))
    try:
        return await asyncio.wait_for(ready, timeout)
    except asyncio.TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)


def test_a_loop_that_cannot_watch_descriptors_waits_on_the_reader_pool() -> None:
    class NoReaders(asyncio.SelectorEventLoop):
        def add_reader(self, *args: Any, **kwargs: Any) -> None:
            raise NotImplementedError

    evolve = Evolve(config=AgentConfig(type="claude"))
    out: list[str] = []
    evolve.on("stdout", out.append)
    loop = NoReaders()
    try:
        result = loop.run_until_complete(evolve.execute_command(SLOW_LINES))
    finally:
        loop.close()
    assert result.state == "completed" and "".join(out) == EXPECTED


def test_two_tasks_waiting_for_the_same_run_is_an_error_not_a_hang(fake_harness: Path) -> None:
    evolve = slow_fake(fake_harness)

    async def main() -> None:
        async with evolve.stream("x") as stream:
            iterator = aiter(stream)
            for _ in range(200):
                # Until one call has to wait (lines are 20 ms apart; the first ones are ready).
                first = asyncio.ensure_future(anext(iterator))
                while not first.done() and not stream._op._on_loop:  # type: ignore[attr-defined]
                    await asyncio.sleep(0.001)
                if not first.done():
                    break
                await first
            else:
                pytest.fail("no call ever waited")
            with pytest.raises(RuntimeError, match="one reader at a time"):
                await anext(iterator)
            await first  # the waiting task still gets its envelope

    asyncio.run(main())
