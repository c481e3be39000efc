"""agentstream: decode the JSONL streams of coding-agent CLIs into ACP-style events.

Sans-IO decoding (no process is started)::

    import agentstream

    decoder = agentstream.Decoder("codex")
    for chunk in chunks:                      # bytes, at any boundaries
        for event in decoder.feed(chunk):     # OutputEvent dicts, camelCase keys
            print(event["update"]["sessionUpdate"])
    events = decoder.finish()                 # a last line without a newline

    events = agentstream.parse("claude", open("trace.jsonl", "rb").read())

Runs (the seed's client object)::

    from agentstream import Evolve, AgentConfig

    async with Evolve(AgentConfig(type="claude")) as evolve:
        evolve.on("content", lambda event: print(event["update"]["sessionUpdate"]))
        result = await evolve.run("Hello", on_event=lambda e: print(e["type"]), timeout_ms=60_000)
        again = await evolve.run("And now in French")   # continues the same conversation

    async with evolve.stream("Hello") as stream:
        async for envelope in stream:          # {"run_id", "sequence", "channel", "event"}
            ...
    result = await stream

Replay recorded output through the whole pipeline (sans-IO): ``agentstream.replay(agent, data)``.

Runs on an ``agentstream serve`` (standard library only; reconnects and resumes by sequence)::

    client = agentstream.connect("http://127.0.0.1:8787", token)
    run = client.run("claude", "Hello")
    for envelope in run:                       # the same envelope dicts as a local run
        ...
    result = run.wait()                        # RunResult
"""

from . import types
from ._client_types import Limits, Millis, Status
from ._evolve import AgentConfig, Evolve, Handler
from ._native import AGENTS, CHANNELS, DEFAULT_KILL_GRACE_MS, DEFAULT_LIMITS, Decoder, __version__, parse
from ._run import BackgroundRun, Done, HookHandler, Replay, RunResult, RunStream, SyncRunStream, replay
from .client import Client, ConnectionLostError, RemoteRun, ServerError, StreamGapError, connect
from .errors import (
    AgentstreamError,
    AlreadyRunningError,
    DecodeLimitError,
    HarnessNotFoundError,
    InternalError,
    InvalidAgentError,
    InvalidArgumentError,
    InvalidChannelError,
    NotRunningError,
    NullArgumentError,
    InvalidHandleError,
    BusyError,
    BufferTooSmallError,
    StillRunningError,
    PanicError,
    CannotResumeError,
    UnsupportedError,
    RunCancelledError,
    RunTimeoutError,
    SpawnFailedError,
)
from .types import (
    AgentError,
    AgentMessageChunk,
    AgentThoughtChunk,
    AgentUsage,
    CancelKind,
    ContentBlock,
    DecodeStats,
    Diagnostic,
    DiffContent,
    Envelope,
    HookEvent,
    ImageContent,
    LifecycleEvent,
    OutputEvent,
    Plan,
    PlanEntry,
    Pressure,
    ReplayOutcome,
    RunState,
    SessionUpdate,
    TextContent,
    TokenUsage,
    ToolCall,
    ToolCallContent,
    ToolCallLocation,
    ToolCallUpdate,
    UsageTotals,
    UserMessageChunk,
    WrappedContent,
)

__all__ = [
    "AGENTS",
    "CHANNELS",
    "__version__",
    "DEFAULT_KILL_GRACE_MS",
    "DEFAULT_LIMITS",
    "AgentConfig",
    "BackgroundRun",
    "Decoder",
    "Done",
    "Evolve",
    "Handler",
    "HookHandler",
    "Limits",
    "Millis",
    "Replay",
    "RunResult",
    "RunStream",
    "Status",
    "SyncRunStream",
    "parse",
    "replay",
    "types",
    # a client of agentstream serve
    "Client",
    "RemoteRun",
    "connect",
    "ConnectionLostError",
    "ServerError",
    "StreamGapError",
    # errors
    "AgentstreamError",
    "AlreadyRunningError",
    "DecodeLimitError",
    "HarnessNotFoundError",
    "InternalError",
    "InvalidAgentError",
    "InvalidArgumentError",
    "InvalidChannelError",
    "NotRunningError",
    "NullArgumentError",
    "InvalidHandleError",
    "BusyError",
    "BufferTooSmallError",
    "StillRunningError",
    "PanicError",
    "CannotResumeError",
    "UnsupportedError",
    "RunCancelledError",
    "RunTimeoutError",
    "SpawnFailedError",
    # types
    "AgentError",
    "AgentMessageChunk",
    "AgentThoughtChunk",
    "AgentUsage",
    "CancelKind",
    "ContentBlock",
    "DecodeStats",
    "Diagnostic",
    "DiffContent",
    "Envelope",
    "HookEvent",
    "ImageContent",
    "LifecycleEvent",
    "OutputEvent",
    "Plan",
    "PlanEntry",
    "Pressure",
    "ReplayOutcome",
    "RunState",
    "SessionUpdate",
    "TextContent",
    "TokenUsage",
    "ToolCall",
    "ToolCallContent",
    "ToolCallLocation",
    "ToolCallUpdate",
    "UsageTotals",
    "UserMessageChunk",
    "WrappedContent",
]
