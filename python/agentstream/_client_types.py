"""The data types of ``Evolve`` beyond the wire shapes of ``types``: run limits and ``status()``.

Kept apart from ``types`` (whose shapes are generated from the core's schema) so either can be
replaced without touching the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from .types import AgentName, AgentState, RunState, SandboxState

__all__ = ["Limits", "Millis", "Status"]

Millis = int | float | timedelta
"""A duration: a number of MILLISECONDS (as in every agentstream language), or a ``timedelta``."""


@dataclass(frozen=True)
class Limits:
    """The bounds of one run (decisions.md §3). ``None`` keeps the core's default
    (``agentstream.DEFAULT_LIMITS``: 256 items, 8 MiB, 30 000 ms, 16 MiB).

    Past ``high_water`` unread items or ``byte_budget`` unread bytes, arriving text deltas
    (message/thought text, stdout, stderr) merge into the newest buffered one (exactly, counted
    in ``coalesced``); nothing else merges and nothing is dropped. A reader that leaves items
    unread for ``stall_ms`` milliseconds gets the run cancelled (``cancel_kind == "stalled"``).
    A harness stdout line longer than ``max_line_bytes`` is skipped and reported.
    """

    high_water: int | None = None
    """Unread items before text deltas merge (0: from the first delta)."""
    byte_budget: int | None = None
    """Unread bytes before text deltas merge and the harness is read no faster than you read (> 0)."""
    stall_ms: Millis | None = None
    """How long delivered items may stay unread before the run is cancelled as stalled (> 0)."""
    max_line_bytes: int | None = None
    """The longest harness stdout line decoded, in bytes (> 0)."""


@dataclass(frozen=True)
class Status:
    """What ``Evolve.status()`` reports: the seed's ``status()``."""

    agent: AgentName
    """The harness."""
    sandbox: SandboxState
    """The local environment's state (``ready``, ``running``, ``paused``, ...)."""
    agent_state: AgentState
    """The agent's state (``idle``, ``running``, ``interrupted``, ``error``)."""
    has_run: bool
    """Whether a run was ever started from this ``Evolve``."""
    active_run_id: str | None = None
    """The active run's id, while one runs."""
    session_id: str | None = None
    """The harness session the next run continues (``None``: the next run starts a new one)."""
    last_status: RunState | None = None
    """How the last run ended, once one did."""
