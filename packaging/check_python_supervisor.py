"""Run with an installed wheel's interpreter (packaging/install_test.sh): the package names the
supervisor program it ships, and a run's harness has that program as its parent (its command
line), not a fork of this interpreter. Exits non-zero, saying what was found, otherwise."""

from agentstream import Evolve, _supervisor

assert _supervisor.name_shipped_program(), f"{_supervisor.PROGRAM} missing or not executable"
lines: list[str] = []
evolve = Evolve()
evolve.on("stdout", lines.append)
evolve.execute_command_sync(["sh", "-c", r"tr '\0' ' ' < /proc/$PPID/cmdline"])
parent = "".join(lines)
assert parent.startswith(f"{_supervisor.PROGRAM} --agentstream-supervisor-1"), parent
print(f"the supervisor is {_supervisor.PROGRAM}")
