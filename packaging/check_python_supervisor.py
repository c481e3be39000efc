"""Run with an installed wheel's interpreter (packaging/install_test.sh): the wheel ships
`agentstream-supervisor` beside the native module, executable, and a run's harness has that
program as its parent (its command line), not a fork of this interpreter. Exits non-zero, saying
what was found, otherwise."""

import os
from pathlib import Path

import agentstream
from agentstream import Evolve

program = Path(agentstream._native.__file__).with_name("agentstream-supervisor")
assert program.is_file() and os.access(program, os.X_OK), f"{program} missing or not executable"
lines: list[str] = []
evolve = Evolve()
evolve.on("stdout", lines.append)
evolve.execute_command_sync(["sh", "-c", r"tr '\0' ' ' < /proc/$PPID/cmdline"])
parent = "".join(lines)
assert parent.startswith(f"{program} --agentstream-supervisor-1"), parent
print(f"the supervisor is {program}")
