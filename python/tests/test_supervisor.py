"""A run's supervisor is the ``agentstream-supervisor`` program shipped beside the native
module (the core finds it there), not a fork of this Python process (which would copy its page
tables on every run: 44 ms per run with 1 GB touched here, docs/benchmarks.md). The harness
reads its parent's command line from ``/proc``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import agentstream

PROGRAM = Path(agentstream._native.__file__).with_name("agentstream-supervisor")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

PARENT = ["sh", "-c", r"tr '\0\n' '  ' < /proc/$PPID/cmdline; echo; cat /proc/$PPID/comm"]

SHOW_PARENT = r"""
import sys
from agentstream import Evolve
out = []
evolve = Evolve()
evolve.on("stdout", out.append)
evolve.execute_command_sync(sys.argv[1:])
print("".join(out), end="")
"""


def parent_of_harness(env: dict[str, str] | None = None) -> list[str]:
    """The harness's parent's command line and name, as the harness reads them."""
    done = subprocess.run([sys.executable, "-c", SHOW_PARENT, *PARENT], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=60, check=True)
    return done.stdout.splitlines()


def test_the_program_is_shipped_beside_the_module() -> None:
    assert PROGRAM.is_file(), f"{PROGRAM} missing: `make python-develop` puts it there"
    assert os.access(PROGRAM, os.X_OK)


def test_the_harness_runs_under_the_shipped_program() -> None:
    cmdline, name = parent_of_harness()
    assert cmdline.startswith(f"{PROGRAM} --agentstream-supervisor-1"), cmdline
    assert name == "agentstream-sup"


def test_the_environment_can_ask_for_a_forked_supervisor() -> None:
    cmdline, name = parent_of_harness({"AGENTSTREAM_SUPERVISOR": "fork"})
    assert cmdline.startswith(f"{sys.executable} -c ") and "--agentstream-supervisor-1" not in cmdline, cmdline
    assert name == "agentstream-sup"


def test_a_run_in_this_process_ends_with_the_harness_exit_status() -> None:
    result = agentstream.Evolve().execute_command_sync(["sh", "-c", "exit 3"])
    assert (result.state, result.exit_code) == ("failed", 3)


def test_started_by_hand_it_says_what_it_is() -> None:
    done = subprocess.run([str(PROGRAM)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "only supervises a run that agentstream starts" in done.stderr
