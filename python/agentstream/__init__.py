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

    evolve = Evolve(config=AgentConfig(type="claude"))
    evolve.on("content", lambda event: print(event["update"]["sessionUpdate"]))
    result = await evolve.run(prompt="Hello", on_event=lambda e: print(e["type"]))

    async with evolve.stream(prompt="Hello") as stream:
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
from ._evolve import AgentConfig, Evolve, Handler
from ._native import AGENTS, CHANNELS, Decoder, __version__, parse
from ._run import Backpressure, Done, HookHandler, Replay, RunResult, RunStream, SyncRunStream, replay
from .client import Client, ConnectionLostError, RemoteRun, ServerError, StreamGapError, connect
from .errors import (
    AgentstreamError,
    AlreadyRunningError,
    DecodeLimitError,
    HandlerWarning,
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
    "AgentConfig",
    "Backpressure",
    "Decoder",
    "Done",
    "Evolve",
    "Handler",
    "HookHandler",
    "Replay",
    "RunResult",
    "RunStream",
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
    "HandlerWarning",
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
