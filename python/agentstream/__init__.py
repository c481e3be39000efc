"""agentstream: decode the JSONL streams of coding-agent CLIs into ACP-style events.

Sans-IO decoding (no process is started)::

    import agentstream

    decoder = agentstream.Decoder("codex")
    for chunk in chunks:                      # bytes, at any boundaries
        for event in decoder.feed(chunk):     # OutputEvent dicts, camelCase keys
            print(event["update"]["sessionUpdate"])
    events = decoder.finish()                 # a last line without a newline

    events = agentstream.parse("claude", open("trace.jsonl", "rb").read())

The client object of the seed: ``Evolve(config=AgentConfig(type="claude"))`` with
``on("content" | "lifecycle" | "stdout" | "stderr", handler)``.
"""

from . import types
from ._evolve import AgentConfig, Evolve, Handler
from ._native import AGENTS, CHANNELS, Decoder, __version__, parse
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
    RunCancelledError,
    RunTimeoutError,
    SpawnFailedError,
)
from .types import (
    AgentError,
    AgentMessageChunk,
    AgentThoughtChunk,
    AgentUsage,
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
    SessionUpdate,
    TextContent,
    TokenUsage,
    ToolCall,
    ToolCallContent,
    ToolCallLocation,
    ToolCallUpdate,
    UserMessageChunk,
    WrappedContent,
)

__all__ = [
    "AGENTS",
    "CHANNELS",
    "__version__",
    "AgentConfig",
    "Decoder",
    "Evolve",
    "Handler",
    "parse",
    "types",
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
    "RunCancelledError",
    "RunTimeoutError",
    "SpawnFailedError",
    # types
    "AgentError",
    "AgentMessageChunk",
    "AgentThoughtChunk",
    "AgentUsage",
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
    "SessionUpdate",
    "TextContent",
    "TokenUsage",
    "ToolCall",
    "ToolCallContent",
    "ToolCallLocation",
    "ToolCallUpdate",
    "UserMessageChunk",
    "WrappedContent",
]
