"""Decoder behaviour at the Python edge: inputs, stats, diagnostics, threads and the GIL."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

import agentstream

LINE = b'{"type":"assistant","message":{"content":[{"type":"text","text":"hello world"}]}}\n'


def test_stats_count_every_kind_of_bad_line() -> None:
    d = agentstream.Decoder("codex")
    assert d.feed(b"null\n42\n[1]\n{not json\n\n   \n") == []
    d.feed(b'{"type":"never-heard-of-it"}\n\xff\xfe\n')
    assert d.finish() == []
    s = d.stats
    assert (s["lines"], s["blank_lines"], s["non_object"], s["invalid_json"]) == (8, 2, 3, 2)
    assert s["invalid_utf8_lines"] == 1
    assert [x["line"] for x in d.diagnostics] == [8]
    assert "U+FFFD" in d.diagnostics[0]["message"]
    assert d.session_id is None
    assert "8 lines" in repr(d)


def test_partial_lines_wait_for_finish() -> None:
    d = agentstream.Decoder("claude")
    d.feed(b'{"type":')
    assert d.has_partial_line
    assert d.stats["lines"] == 0
    d.finish()
    assert d.stats["lines"] == 1 and not d.has_partial_line
    assert d.feed(b"{}\n") == [] and d.stats["lines"] == 1, "nothing is decoded after finish()"
    assert [x for x in d.diagnostics if "after finish()" in x["message"]], d.diagnostics


def test_every_bytes_like_input_and_any_str_decode() -> None:
    import array
    d = agentstream.Decoder("claude")
    d.feed("{\"x\": \"lone \ud800 surrogate\"}\n")  # no UTF-8 for it: U+FFFD, as for bad bytes
    assert d.stats["lines"] == 1
    cut = len(LINE) // 4 * 4
    for words in (array.array("I", LINE[:cut]), memoryview(array.array("I", LINE[:cut]))):
        d = agentstream.Decoder("claude")
        assert d.feed(words) == []
        assert d.feed(LINE[cut:]) == agentstream.Decoder("claude").feed(LINE), type(words)
    with pytest.raises(TypeError, match="bytes-like"):
        d.feed(3.5)  # type: ignore[arg-type]


def test_str_input_is_utf8() -> None:
    d = agentstream.Decoder("claude")
    d.feed("{\"x\": \"héllo ✓\"}\n")
    assert d.stats["bytes"] == len("{\"x\": \"héllo ✓\"}\n".encode())
    assert d.stats["invalid_utf8_lines"] == 0


def test_large_inputs_release_the_gil() -> None:
    data = LINE * 200_000  # ~16 MB: decoded with the GIL released
    ticks: list[float] = []
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            ticks.append(time.perf_counter())

    old = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    t = threading.Thread(target=spin)
    t.start()
    try:
        time.sleep(0.01)
        d = agentstream.Decoder("claude")
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            d.feed(data)
            end = time.perf_counter()
            runs.append(sum(1 for x in ticks if start < x < end) / max(end - start, 1e-9))
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(old)
    # Another Python thread keeps running while Rust decodes (hundreds of thousands of ticks per
    # second here); with the GIL held it only runs at the edges of the call and between
    # switch intervals: a few thousand ticks per second (measured: 2,000-3,300).
    assert max(runs) > 30_000, runs


def test_threads_sharing_a_decoder_do_not_deadlock() -> None:
    d = agentstream.Decoder("claude")
    big = LINE * 2000  # above the detach threshold
    errors: list[BaseException] = []

    def work(chunk: bytes) -> None:
        try:
            for _ in range(20):
                d.feed(chunk)
                _ = d.stats
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(c,)) for c in (big, LINE, big, LINE * 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert not errors
    assert d.stats["lines"] == 20 * (2000 + 1 + 2000 + 3)


def test_the_garbage_collector_is_left_as_the_caller_set_it() -> None:
    # Building a batch of events holds the cyclic collector off (convert.rs, GcPause), then puts
    # it back as it was: on when it was on, off when the caller had turned it off.
    import gc

    line = b'{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"hi"}]},"session_id":"s"}\n'
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            events = agentstream.Decoder("claude").feed(line * 2000)
            assert len(events) == 2000
            assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def large_input(agent: str, at_least: int = 256 * 1024) -> bytes:
    """Every golden input of `agent` (each ending with a newline), repeated past `at_least` bytes:
    large feeds of it decode on the core's helper thread (core/src/decode/overlapped.rs)."""
    from conftest import GOLDEN

    parts = [p.read_bytes() for p in sorted((GOLDEN / agent).glob("*.input.jsonl"))]
    one = b"".join(p if p.endswith(b"\n") else p + b"\n" for p in parts)
    return one * (at_least // len(one) + 1)


def decode(agent: str, data: bytes, chunk: int) -> tuple[list[object], dict[str, int], list[object]]:
    d = agentstream.Decoder(agent)
    events = [ev for at in range(0, len(data), chunk) for ev in d.feed(data[at:at + chunk])]
    events += d.finish()
    return events, d.stats, d.diagnostics


def test_large_feeds_give_what_small_ones_give() -> None:
    # A 256 KiB feed decodes a piece at a time on the helper thread while the dicts of the pieces
    # before are built; 4 KiB feeds decode on the caller's thread. Same events, stats, diagnostics.
    for agent in ("claude", "codex", "gemini", "qwen", "kimi", "opencode", "droid"):
        data = large_input(agent)
        whole = decode(agent, data, len(data))
        assert whole == decode(agent, data, 4096), agent
        assert len(whole[0]) > 100, agent
    if (os.cpu_count() or 1) > 1 and sys.platform == "linux":
        # The large feeds above really went through the helper (named for its thread).
        names = {(task / "comm").read_text().strip() for task in Path("/proc/self/task").iterdir()}
        assert "agentstream-dec" in names, names


def test_large_feeds_from_several_threads() -> None:
    # Each thread its own decoder: one feed at a time holds the helper, the others decode on their
    # own thread; every result is the single-threaded one.
    data = large_input("claude")
    expected = decode("claude", data, len(data))
    results: list[object] = []

    def work() -> None:
        for _ in range(3):
            results.append(decode("claude", data, 64 * 1024))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert len(results) == 12 and all(r == expected for r in results)


def test_a_forked_child_decodes_large_feeds() -> None:
    # The helper thread is not in a forked child: the child starts its own instead of waiting
    # on the parent's forever.
    import signal

    data = large_input("claude")
    expected = len(decode("claude", data, len(data))[0])
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status
        signal.alarm(60)
        ok = len(decode("claude", data, len(data))[0]) == expected
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.skipif(sys.platform != "linux", reason="reads the thread names in /proc")
def test_the_helper_can_be_turned_off_for_a_process() -> None:
    # AGENTSTREAM_DECODE_HELPER=off: every feed decodes on its caller's thread (no helper thread
    # is started), with the same events.
    import subprocess

    script = (
        "import sys, pathlib, agentstream\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from test_decoder import decode, large_input\n"
        "data = large_input('claude')\n"
        "events = decode('claude', data, len(data))[0]\n"
        "names = {(t / 'comm').read_text().strip() for t in pathlib.Path('/proc/self/task').iterdir()}\n"
        "print(len(events), 'agentstream-dec' in names)\n"
    )
    here = str(Path(__file__).parent)
    expected = len(decode("claude", large_input("claude"), 1 << 20)[0])
    for value, started in (("off", False), ("0", False), ("on", (os.cpu_count() or 1) > 1)):
        env = {**os.environ, "AGENTSTREAM_DECODE_HELPER": value}
        out = subprocess.run([sys.executable, "-c", script, here], env=env, capture_output=True, text=True,
                             check=True, timeout=120).stdout.split()
        assert out == [str(expected), str(started)], (value, out)


def test_large_inputs_release_the_gil_without_the_helper_too() -> None:
    # With the helper off a large feed decodes on the caller's thread, the GIL released meanwhile.
    import subprocess

    env = {**os.environ, "AGENTSTREAM_DECODE_HELPER": "off"}
    test = f"{__file__}::test_large_inputs_release_the_gil"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
