"""Nothing of a run's process tree outlives the Python process that started it (issue 24,
item 2): when the interpreter exits while ``run_sync`` runs in a thread, or when the process is
killed outright with SIGKILL, the harness, a child in its process group and a child that left it
(``setsid``) are all gone. Processes are counted by a marker in their environment
(``/proc/<pid>/environ``), unique per test, which the harness and its children inherit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import GOLDEN

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts processes in /proc")

MARK = "AGENTSTREAM_TEST_MARK"

HOST = r'''
import os, sys, threading, time
from agentstream import AgentConfig, Evolve

fake, trace, mark = sys.argv[1:4]
env = {"AGENTSTREAM_FAKE_TRACE": trace, "AGENTSTREAM_FAKE_HANG": "1", "AGENTSTREAM_FAKE_CHILDREN": "1",
       "AGENTSTREAM_TEST_MARK": mark}
evolve = Evolve(config=AgentConfig(type="claude", bin=fake, env=env))
threading.Thread(target=lambda: evolve.run_sync(prompt="x"), daemon=True).start()

def marked():
    n = 0
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                n += f"AGENTSTREAM_TEST_MARK={mark}".encode() in f.read().split(b"\0")
        except OSError:
            pass
    return n

deadline = time.monotonic() + 20
while marked() < 3 and time.monotonic() < deadline:
    time.sleep(0.02)
if len(sys.argv) > 4:  # fork without exec (multiprocessing's "fork", pre-fork servers)
    child = os.fork()
    if child == 0:
        time.sleep(60)
        os._exit(0)
    print(child, flush=True)
print("ready", flush=True)
sys.stdin.readline()   # the test says how to end: by returning (interpreter exit) or by being killed
'''


def marked(mark: str) -> list[int]:
    needle = f"{MARK}={mark}".encode()
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    out.append(int(pid))
        except OSError:
            pass
    return out


def assert_none_left(mark: str, why: str) -> None:
    deadline = time.monotonic() + 10
    while (left := marked(mark)) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert left == [], f"{why}: processes left behind: {left}"


@pytest.mark.parametrize("end", ["interpreter exit", "SIGKILL"])
def test_no_process_outlives_the_python_host(fake_harness: Path, end: str) -> None:
    mark = f"py-{end.replace(' ', '-')}-{os.getpid()}-{time.monotonic_ns()}"
    host = subprocess.Popen([sys.executable, "-c", HOST, str(fake_harness), str(GOLDEN / "claude" / "s1-text"), mark],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert host.stdout is not None and host.stdin is not None
        assert host.stdout.readline().strip() == "ready"
        assert len(marked(mark)) >= 3, "the harness and its two children run"
        if end == "SIGKILL":
            host.send_signal(signal.SIGKILL)
        else:
            host.stdin.write("\n")
            host.stdin.flush()
        host.wait(timeout=30)
        assert_none_left(mark, f"after the host's {end}")
    finally:
        if host.poll() is None:
            host.kill()


def test_a_forked_child_does_not_keep_the_runs_of_a_killed_host_going(fake_harness: Path) -> None:
    """A host that forked without exec, then died: its child holds copies of the host's
    descriptors, the runs' lifelines among them, and outlives it. The harness trees go all the
    same."""
    mark = f"py-fork-{os.getpid()}-{time.monotonic_ns()}"
    host = subprocess.Popen(
        [sys.executable, "-c", HOST, str(fake_harness), str(GOLDEN / "claude" / "s1-text"), mark, "fork"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    child = 0
    try:
        assert host.stdout is not None
        child = int(host.stdout.readline())
        assert host.stdout.readline().strip() == "ready"
        assert len(marked(mark)) >= 3, "the harness and its two children run"
        host.send_signal(signal.SIGKILL)
        host.wait(timeout=30)
        assert Path(f"/proc/{child}").exists(), "the forked child outlives the host"
        assert_none_left(mark, "after the host's SIGKILL, its forked child still running")
    finally:
        if host.poll() is None:
            host.kill()
        if child:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
