"""Stubs of the native extension module (Rust, pyo3). Import from ``agentstream`` instead."""

from collections.abc import Callable
from typing import Any, Final, Literal, TypedDict, final

from agentstream.types import (
    AgentName,
    ChannelName,
    DecodeStats,
    Diagnostic,
    Envelope,
    HookEvent,
    LifecycleEvent,
    OutputEvent,
    Pressure,
    ReplayOutcome,
)

__all__ = [
    "__version__",
    "AGENTS",
    "CHANNELS",
    "ERROR_KINDS",
    "CH_CONTENT",
    "CH_LIFECYCLE",
    "CH_STDOUT",
    "CH_STDERR",
    "CH_HOOKS",
    "Decoder",
    "Session",
    "Run",
    "Batch",
    "parse",
    "replay",
    "_raise_error_kind",
    "agent_name",
    "channel_name",
    "_hook_to_flat_snake",
    "_parse_json_lines",
    "_output_event_from_json",
    "_output_event_canonical_json",
    "_lifecycle_event_from_json",
    "_decode_count",
    "_raw_json_to_py",
    "_debug_panic",
]

__version__: Final[str]
AGENTS: Final[tuple[AgentName, ...]]
CHANNELS: Final[tuple[ChannelName, ...]]
ERROR_KINDS: Final[dict[str, tuple[int, str]]]
CH_CONTENT: Final[int]
CH_LIFECYCLE: Final[int]
CH_STDOUT: Final[int]
CH_STDERR: Final[int]
CH_HOOKS: Final[int]

_Delivery = tuple[str, Any, int, int]
"""``(channel, payload, sequence, coalesced)``; channel ``content``/``lifecycle``/``stdout``/``stderr``/``hook``."""

class _ReplayDict(TypedDict):
    items: list[Envelope]
    hooks: list[HookEvent]
    outcome: ReplayOutcome
    stats: DecodeStats

@final
class Decoder:
    """A stateful decoder for one harness's stdout: ``feed`` chunks at any boundaries, then ``finish``."""

    def __new__(
        cls,
        agent: str,
        *,
        max_line_bytes: int | None = None,
        on_oversize: Literal["skip", "raise"] = "skip",
        redact: bool = True,
    ) -> Decoder: ...
    def feed(self, data: bytes | bytearray | memoryview | str) -> list[OutputEvent]: ...
    def finish(self) -> list[OutputEvent]: ...
    @property
    def agent(self) -> AgentName: ...
    @property
    def stats(self) -> DecodeStats: ...
    @property
    def diagnostics(self) -> list[Diagnostic]: ...
    @property
    def session_id(self) -> str | None: ...
    @property
    def has_partial_line(self) -> bool: ...

def parse(
    agent: str,
    data: bytes | bytearray | memoryview | str,
    *,
    max_line_bytes: int | None = None,
    on_oversize: Literal["skip", "raise"] = "skip",
    redact: bool = True,
) -> list[OutputEvent]: ...
def agent_name(name: str) -> AgentName: ...
def channel_name(name: str) -> ChannelName: ...
def _hook_to_flat_snake(canonical_json: str) -> HookEvent: ...
def _parse_json_lines(agent: str, data: bytes) -> list[str]: ...
def _decode_count(agent: str, data: bytes) -> int: ...
def _raw_json_to_py(text: str) -> Any: ...
def _debug_panic(detached: bool = False) -> None: ...
def _output_event_from_json(json: str) -> OutputEvent: ...
def _output_event_canonical_json(json: str) -> str: ...
def _lifecycle_event_from_json(json: str) -> LifecycleEvent: ...

@final
class Session:
    """One agent configuration of the core's runner; one operation at a time."""

    def __new__(
        cls,
        agent: str,
        *,
        agent_id: str | None = None,
        bin: str | None = None,
        model: str | None = None,
        extra_args: list[str] = ...,
        cwd: str | None = None,
        env: list[tuple[str, str]] = ...,
    ) -> Session: ...
    def start_run(
        self,
        prompt: str,
        *,
        timeout: float | None = None,
        high_water: int | None = None,
        byte_budget: int | None = None,
        stall_seconds: float | None = None,
        redact: bool = True,
        idempotent_tools: list[str] = ...,
        hooks: bool = False,
        attach_reader: bool = True,
        background: bool = False,
        kill_grace: float | None = None,
        channels: int = ...,
    ) -> Run: ...
    def start_command(
        self,
        argv: list[str],
        *,
        cwd: str | None = None,
        env: list[tuple[str, str]] = ...,
        timeout: float | None = None,
        high_water: int | None = None,
        byte_budget: int | None = None,
        stall_seconds: float | None = None,
        hooks: bool = False,
        attach_reader: bool = True,
        background: bool = False,
        kill_grace: float | None = None,
        channels: int = ...,
    ) -> Run: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def interrupt(self, reason: str = "interrupted by the caller") -> None: ...
    def kill(self) -> None: ...
    def ready_event(self) -> LifecycleEvent: ...
    @property
    def active_run_id(self) -> str | None: ...
    @property
    def agent(self) -> AgentName: ...

@final
class Batch:
    """Pulled deliveries, converted as they are iterated (once)."""

    def __len__(self) -> int: ...
    def __iter__(self) -> Batch: ...
    def __next__(self) -> _Delivery: ...
    def call(
        self, table: dict[str, tuple[Callable[[Any], object], ...]]
    ) -> tuple[str, Any, int, int, object, Exception | None] | None: ...

@final
class Run:
    """The reader side of one operation: pull batches of deliveries."""

    @property
    def run_id(self) -> str: ...
    @property
    def channels(self) -> int: ...
    @channels.setter
    def channels(self, mask: int) -> None: ...
    def try_pull(self, max: int = 256) -> Batch: ...
    def pull(self, max: int = 256, timeout: float = 0.25) -> Batch: ...
    @property
    def ended(self) -> bool: ...
    @property
    def finished(self) -> bool: ...
    def cancel(self, reason: str = "cancelled by the caller") -> None: ...
    def reader_left(self) -> None: ...
    @property
    def pressure(self) -> Pressure: ...
    def result(self) -> dict[str, Any] | None: ...
    def wait(self, timeout: float | None = None) -> dict[str, Any] | None: ...

def replay(
    agent: str,
    data: bytes | bytearray | memoryview | str,
    *,
    run_id: str | None = None,
    agent_id: str | None = None,
    timestamp: str | None = None,
    redact: bool = True,
) -> _ReplayDict: ...
def _raise_error_kind(kind: str, message: str) -> None: ...
