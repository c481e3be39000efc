"""A run's supervisor is the ``agentstream-supervisor`` program shipped beside the native
module, not a fork of this Python process (which would copy its page tables on every run: 44 ms
per run with 1 GB touched here, docs/benchmarks.md). The harness reads its parent's command line
from ``/proc``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import agentstream
from agentstream import _supervisor

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


def test_the_shipped_program_is_present_and_named() -> None:
    assert _supervisor.PROGRAM.is_file(), f"{_supervisor.PROGRAM} missing: `make python-develop` puts it there"
    assert os.access(_supervisor.PROGRAM, os.X_OK)
    assert _supervisor.name_shipped_program()


def test_the_harness_runs_under_the_shipped_program() -> None:
    cmdline, name = parent_of_harness()
    assert cmdline.startswith(f"{_supervisor.PROGRAM} --agentstream-supervisor-1"), cmdline
    assert name == "agentstream-sup"


def test_the_environment_can_ask_for_a_forked_supervisor() -> None:
    cmdline, name = parent_of_harness({"AGENTSTREAM_SUPERVISOR": "fork"})
    assert cmdline.startswith(f"{sys.executable} -c ") and "--agentstream-supervisor-1" not in cmdline, cmdline
    assert name == "agentstream-sup"


def test_a_run_in_this_process_ends_with_the_harness_exit_status() -> None:
    result = agentstream.Evolve().execute_command_sync(["sh", "-c", "exit 3"])
    assert (result.state, result.exit_code) == ("failed", 3)


@pytest.mark.parametrize(("path", "why"), [
    ("relative/agentstream-supervisor", "not an absolute path"),
    ("/definitely/not/agentstream-supervisor", "no such file"),
    (__file__, "not executable"),
])
def test_a_program_that_cannot_be_one_is_refused(path: str, why: str) -> None:
    with pytest.raises(agentstream.InvalidArgumentError, match=why):
        agentstream._native._set_supervisor_program(path)


def test_started_by_hand_it_says_what_it_is() -> None:
    done = subprocess.run([str(_supervisor.PROGRAM)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "only supervises a run that agentstream starts" in done.stderr
