"""Stubs of the native extension module (Rust, pyo3). Import from ``agentstream`` instead."""

from typing import Final, Literal, final

from agentstream.types import (
    AgentName,
    ChannelName,
    DecodeStats,
    Diagnostic,
    HookEvent,
    LifecycleEvent,
    OutputEvent,
)

__all__ = [
    "__version__",
    "AGENTS",
    "CHANNELS",
    "ERROR_KINDS",
    "Decoder",
    "parse",
    "agent_name",
    "channel_name",
    "_hook_to_flat_snake",
    "_parse_json_lines",
    "_output_event_from_json",
    "_output_event_canonical_json",
    "_lifecycle_event_from_json",
    "_decode_count",
    "_debug_panic",
]

__version__: Final[str]
AGENTS: Final[tuple[AgentName, ...]]
CHANNELS: Final[tuple[ChannelName, ...]]
ERROR_KINDS: Final[dict[str, tuple[int, str]]]

@final
class Decoder:
    """A stateful decoder for one harness's stdout: ``feed`` chunks at any boundaries, then ``finish``."""

    def __new__(
        cls,
        agent: str,
        *,
        max_line_bytes: int | None = None,
        on_oversize: Literal["skip", "raise"] = "skip",
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
) -> list[OutputEvent]: ...
def agent_name(name: str) -> AgentName: ...
def channel_name(name: str) -> ChannelName: ...
def _hook_to_flat_snake(canonical_json: str) -> HookEvent: ...
def _parse_json_lines(agent: str, data: bytes) -> list[str]: ...
def _decode_count(agent: str, data: bytes) -> int: ...
def _debug_panic(detached: bool = False) -> None: ...
def _output_event_from_json(json: str) -> OutputEvent: ...
def _output_event_canonical_json(json: str) -> str: ...
def _lifecycle_event_from_json(json: str) -> LifecycleEvent: ...
