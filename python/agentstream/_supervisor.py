"""Names ``agentstream-supervisor``, shipped beside the native module, as the program that
supervises this process's runs. This module cannot be run as a program itself (it needs the
interpreter's symbols), so without that file every run's supervisor is a fork of this process,
which copies its page tables (a large process pays per run) and, while the run lives, every page
it writes. A file that is missing or not executable (an install that lost its mode) keeps the
fork: runs work the same, only their start costs more (docs/reliability.md)."""

from __future__ import annotations

from pathlib import Path

from . import _native
from .errors import AgentstreamError

PROGRAM = Path(__file__).resolve().with_name("agentstream-supervisor")
"""Where the package looks for the program."""


def name_shipped_program() -> bool:
    """Name :data:`PROGRAM` to the core; ``False`` (runs keep forking) when it cannot be used."""
    if not PROGRAM.is_file():
        return False
    try:
        _native._set_supervisor_program(str(PROGRAM))
    except AgentstreamError:
        return False
    return True


name_shipped_program()
