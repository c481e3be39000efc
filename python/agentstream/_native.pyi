"""Stubs of the native extension module (Rust, pyo3). Import from ``agentstream`` instead."""

from collections.abc import Callable
from typing import Any, Final, Literal, TypedDict, final

from agentstream.types import (
    AgentName,
    AgentState,
    ChannelName,
    DecodeStats,
    Diagnostic,
    Envelope,
    HookEvent,
    LifecycleEvent,
    OutputEvent,
    Pressure,
    ReplayOutcome,
    RunResultDict,
    RunState,
    SandboxState,
)

__all__ = [
    "__version__",
    "AGENTS",
    "CHANNELS",
    "ERROR_KINDS",
    "DEFAULT_LIMITS",
    "DEFAULT_KILL_GRACE_MS",
    "Decoder",
    "Client",
    "Run",
    "Batch",
    "parse",
    "replay",
    "_raise_error_kind",
    "agent_spec",
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
DEFAULT_LIMITS: Final[_Limits]
DEFAULT_KILL_GRACE_MS: Final[int]

_Delivery = tuple[str, Any, int, int]
"""``(channel, payload, sequence, coalesced)``; channel ``content``/``lifecycle``/``stdout``/``stderr``/``hook``."""

class _Limits(TypedDict):
    high_water: int
    byte_budget: int
    stall_ms: int
    max_line_bytes: int

class _Status(TypedDict, total=False):
    agent: AgentName
    sandbox: SandboxState
    agent_state: AgentState
    has_run: bool
    active_run_id: str
    session_id: str
    last_status: RunState

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
    def feed(self, data: bytes | bytearray | memoryview | str) -> list[OutputEvent]:
        """The events of every line the chunk completed. A chunk of 32 KiB or more decodes on the
        core's helper thread while the dicts are built (off with ``AGENTSTREAM_DECODE_HELPER=off``)."""
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

def agent_spec(
    agent: str,
    *,
    agent_id: str | None = None,
    bin: str | None = None,
    model: str | None = None,
    extra_args: list[str] = ...,
    cwd: str | None = None,
    env: dict[str, str] = ...,
) -> AgentName: ...

@final
class Client:
    """The core bridge's client: one agent configuration, its subscriptions, one run at a time."""

    def __new__(
        cls,
        agent: str,
        *,
        agent_id: str | None = None,
        bin: str | None = None,
        model: str | None = None,
        extra_args: list[str] = ...,
        cwd: str | None = None,
        env: dict[str, str] = ...,
    ) -> Client: ...
    @property
    def agent(self) -> AgentName: ...
    def on(self, name: str) -> int: ...
    def off(self, name: str) -> list[int]: ...
    def off_id(self, id: int) -> bool: ...
    def subscribers(self, name: str) -> list[int]: ...
    def start(
        self,
        *,
        prompt: str | None = None,
        command: list[str] | None = None,
        shell: str | None = None,
        model: str | None = None,
        cwd: str | None = None,
        env: dict[str, str] = ...,
        timeout_ms: float | None = None,
        background: bool = False,
        hooks: bool = False,
        redact: bool = True,
        resume: str | None = None,
        idempotent_tools: list[str] = ...,
        kill_grace_ms: float | None = None,
        high_water: float | None = None,
        byte_budget: float | None = None,
        stall_ms: float | None = None,
        max_line_bytes: float | None = None,
        read: str = "handlers",
    ) -> Run: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def interrupt(self, reason: str = "interrupted by the caller") -> bool: ...
    def kill(self) -> bool: ...
    def status(self) -> _Status: ...
    @property
    def active_run_id(self) -> str | None: ...
    def session_id(self) -> str | None: ...
    def set_session_id(self, session_id: str | None) -> None: ...

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
    """One started run of the core's bridge: pull batches of deliveries, then its result."""

    @property
    def run_id(self) -> str: ...
    @property
    def has_reader(self) -> bool: ...
    def try_pull(self, max_events: int = 256) -> Batch: ...
    def pull(self, timeout_ms: float = 250.0, max_events: int = 256) -> Batch: ...
    @property
    def wake_fd(self) -> int: ...
    def pull_or_arm(self, max_events: int = 256) -> Batch | None: ...
    @property
    def ended(self) -> bool: ...
    @property
    def finished(self) -> bool: ...
    def cancel(self, reason: str = "cancelled by the caller") -> None: ...
    def reader_left(self) -> None: ...
    @property
    def pressure(self) -> Pressure: ...
    def result(self) -> RunResultDict: ...
    def wait(self, timeout_ms: float | None = None) -> RunResultDict | None: ...
    def wait_finished(self, timeout_ms: float) -> bool: ...
    def handler_failed(self, handler: int, channel: str, sequence: int, message: str) -> bool: ...
    @property
    def handler_errors(self) -> int: ...

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
