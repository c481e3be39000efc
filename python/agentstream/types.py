"""Typed shapes of everything agentstream hands to Python.

Events are plain ``dict`` objects at run time; these ``TypedDict`` definitions describe them for
type checkers (mypy, pyright). Content events (``OutputEvent``) use the seed's camelCase keys,
exactly as on the wire; lifecycle events, hook events, the envelope and the decode statistics are
snake_case. An optional key is ABSENT when unknown, never ``None`` (the one nullable value is
``DiffContent["oldText"]``, ``None`` for a new file, and ``LifecycleEvent["sandbox_id"]``).

TypedDict unions cannot be narrowed by their discriminator key alone: check
``update["sessionUpdate"]`` and ``cast()`` to the variant, as in the examples of ``docs/python.md``.
"""

from typing import Any, Literal, NotRequired, TypedDict, Union

__all__ = [
    "AgentName",
    "ChannelName",
    "TextContent",
    "ImageContent",
    "ContentBlock",
    "DiffContent",
    "WrappedContent",
    "ToolCallContent",
    "ToolKind",
    "ToolCallStatus",
    "ToolCallLocation",
    "AgentMessageChunk",
    "AgentThoughtChunk",
    "UserMessageChunk",
    "ToolCall",
    "ToolCallUpdate",
    "PlanEntryStatus",
    "PlanEntryPriority",
    "PlanEntry",
    "Plan",
    "AgentError",
    "UsageScope",
    "TokenUsage",
    "AgentUsage",
    "SessionUpdate",
    "SessionUpdateKind",
    "OutputEvent",
    "SandboxState",
    "AgentState",
    "LifecycleReason",
    "BrowserInfo",
    "LifecycleEvent",
    "HookType",
    "HookStatus",
    "HookPause",
    "HookEvent",
    "Envelope",
    "DecodeStats",
    "Diagnostic",
    "Pressure",
    "UsageTotals",
    "RunState",
    "CancelKind",
    "ReplayOutcome",
]

# =============================================================================
# Names
# =============================================================================

AgentName = Literal["claude", "codex", "gemini", "qwen", "kimi", "opencode", "droid"]
"""The harness CLIs agentstream decodes (``"claude-code"`` is accepted as ``"claude"``)."""

ChannelName = Literal["content", "lifecycle", "stdout", "stderr"]
"""The four names ``Evolve.on()`` accepts."""

# =============================================================================
# Content types
# =============================================================================


class TextContent(TypedDict):
    type: Literal["text"]
    text: str


class ImageContent(TypedDict):
    type: Literal["image"]
    data: str  # base64-encoded ("" when only a uri is known)
    mimeType: str  # "image/png", "image/jpeg" ("" when unknown)
    uri: NotRequired[str]


ContentBlock = Union[TextContent, ImageContent]


class DiffContent(TypedDict):
    type: Literal["diff"]
    path: str
    oldText: str | None  # None for new files
    newText: str


class WrappedContent(TypedDict):
    type: Literal["content"]
    content: ContentBlock


ToolCallContent = Union[WrappedContent, DiffContent]

# =============================================================================
# Tool types
# =============================================================================

ToolKind = Literal[
    "read",  # Read, NotebookRead
    "edit",  # Edit, Write, NotebookEdit
    "delete",
    "move",
    "search",  # Glob, Grep, LS
    "execute",  # Bash, BashOutput, KillShell
    "think",  # Task (subagent)
    "fetch",  # WebFetch, WebSearch
    "switch_mode",  # ExitPlanMode
    "other",  # MCP tools, unknown
]

ToolCallStatus = Literal["pending", "in_progress", "completed", "failed"]


class ToolCallLocation(TypedDict):
    path: str
    line: NotRequired[int]


# =============================================================================
# Session updates
# =============================================================================


class AgentMessageChunk(TypedDict):
    sessionUpdate: Literal["agent_message_chunk"]
    content: ContentBlock


class AgentThoughtChunk(TypedDict):
    sessionUpdate: Literal["agent_thought_chunk"]
    content: ContentBlock


class UserMessageChunk(TypedDict):
    sessionUpdate: Literal["user_message_chunk"]
    content: ContentBlock


class ToolCall(TypedDict):
    sessionUpdate: Literal["tool_call"]
    toolCallId: str
    title: str
    toolName: NotRequired[str]  # harness-native name, e.g. "mcp__server__tool"
    kind: ToolKind
    status: ToolCallStatus
    rawInput: NotRequired[Any]  # the tool input as the harness printed it (an object in practice)
    content: NotRequired[list[ToolCallContent]]
    locations: NotRequired[list[ToolCallLocation]]


class ToolCallUpdate(TypedDict):
    sessionUpdate: Literal["tool_call_update"]
    toolCallId: str
    status: NotRequired[ToolCallStatus]
    title: NotRequired[str]
    content: NotRequired[list[ToolCallContent]]
    locations: NotRequired[list[ToolCallLocation]]
    rawOutput: NotRequired[Any]  # the harness's own structured record of the result, verbatim


PlanEntryStatus = Literal["pending", "in_progress", "completed"]
PlanEntryPriority = Literal["high", "medium", "low"]


class PlanEntry(TypedDict):
    content: str
    status: PlanEntryStatus
    priority: PlanEntryPriority


class Plan(TypedDict):
    sessionUpdate: Literal["plan"]
    entries: list[PlanEntry]


class AgentError(TypedDict):
    sessionUpdate: Literal["error"]
    message: str  # the harness's own message, verbatim
    fatal: bool  # True when the harness treated it as terminal for the turn


UsageScope = Literal["call", "run"]


class TokenUsage(TypedDict, total=False):
    promptTokens: int  # input INCLUDING the cached and cache-written shares
    completionTokens: int
    cachedTokens: int  # the cache-read share of promptTokens
    costUsd: float  # only when the harness priced it
    extra: dict[str, Any]  # the harness's other counters, its own key names verbatim


class AgentUsage(TypedDict):
    sessionUpdate: Literal["usage"]
    scope: UsageScope  # one LLM inference, or the harness's whole-run total
    usage: TokenUsage


SessionUpdate = Union[
    AgentMessageChunk,
    AgentThoughtChunk,
    UserMessageChunk,
    ToolCall,
    ToolCallUpdate,
    Plan,
    AgentError,
    AgentUsage,
]

SessionUpdateKind = Literal[
    "agent_message_chunk",
    "agent_thought_chunk",
    "user_message_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "error",
    "usage",
]

# =============================================================================
# Top-level content event
# =============================================================================


class OutputEvent(TypedDict):
    sessionId: NotRequired[str]
    update: SessionUpdate
    timestamp: NotRequired[str]  # the harness's own clock for this line, ISO 8601
    model: NotRequired[str]  # the model the harness named for this line
    messageId: NotRequired[str]  # the harness's id for the LLM message this line belongs to
    parentToolCallId: NotRequired[str]  # on a SUBAGENT's line: the parent's delegating tool call
    extra: NotRequired[dict[str, Any]]  # other facts of the line, the harness's own key names


# =============================================================================
# Lifecycle
# =============================================================================

SandboxState = Literal["booting", "error", "ready", "running", "paused", "stopped"]
AgentState = Literal["idle", "running", "interrupted", "error"]
LifecycleReason = Literal[
    "browser_ready",
    "sandbox_boot",
    "sandbox_ready",
    "sandbox_connected",
    "sandbox_pause",
    "sandbox_resume",
    "sandbox_killed",
    "sandbox_error",
    "run_start",
    "run_complete",
    "run_interrupted",
    "run_failed",
    "run_background_complete",
    "run_background_failed",
    "command_start",
    "command_complete",
    "command_interrupted",
    "command_failed",
    "command_background_complete",
    "command_background_failed",
]


class BrowserInfo(TypedDict, total=False):
    live_url: str
    session_id: str
    session_tag: str


class LifecycleEvent(TypedDict):
    sandbox_id: str | None
    sandbox: SandboxState
    agent: AgentState
    timestamp: str
    browser: NotRequired[BrowserInfo]  # live_url / session_id / session_tag
    reason: LifecycleReason


# =============================================================================
# Hook events (on_event): one flat snake_case dict per event
# =============================================================================

HookType = Literal[
    "run.started",
    "step.started",
    "model.completed",
    "step.completed",
    "tool.started",
    "tool.preliminary_result",
    "tool.completed",
    "tool.failed",
    "tool.indeterminate",
    "run.waiting_for_human",
    "response.output_text.delta",
    "response.reasoning.delta",
    "run.completed",
    "run.failed",
    "run.cancelled",
    "run.stopped",
]

HookStatus = Literal["running", "completed", "failed", "cancelled", "stopped"]


class HookPause(TypedDict):
    kind: str
    tool_call_id: str
    tool_name: NotRequired[str]
    reason: str


class HookEvent(TypedDict):
    """``type``, ``run_id``, ``agent_id``, ``timestamp``, ``status``, ``sequence``, then the
    event's details merged in at the top level (which ones depends on ``type``)."""

    type: HookType
    run_id: str
    agent_id: str
    timestamp: str  # ISO 8601 UTC
    status: HookStatus
    sequence: int  # the stream item it was derived from
    # details
    operation: NotRequired[Literal["run", "command"]]  # run.started
    step_index: NotRequired[int]
    message_id: NotRequired[str]
    model: NotRequired[str]
    usage: NotRequired[TokenUsage]
    tool_call_id: NotRequired[str]
    tool_name: NotRequired[str]
    kind: NotRequired[ToolKind]
    title: NotRequired[str]
    arguments: NotRequired[Any]  # tool.started: the tool input
    result: NotRequired[Any]  # tool.preliminary_result
    output: NotRequired[Any]  # tool.completed: the result text; run.completed: the final answer
    raw_output: NotRequired[Any]
    error: NotRequired[str]  # tool.failed, run.failed
    retryable: NotRequired[bool]
    detail: NotRequired[str]  # tool.indeterminate
    pause: NotRequired[HookPause]  # run.waiting_for_human
    delta: NotRequired[str]  # response.*.delta
    reason: NotRequired[str]  # run.cancelled
    last_sequence: NotRequired[int]  # run.cancelled
    stop_reason: NotRequired[str]  # run.stopped


# =============================================================================
# Envelope (iterator API) and decoder facts
# =============================================================================


class Envelope(TypedDict):
    """One item of a run's ordered stream: every channel shares one gapless ``sequence``."""

    run_id: str
    sequence: int
    channel: ChannelName
    event: OutputEvent | LifecycleEvent | str  # str for stdout / stderr
    coalesced: NotRequired[int]  # text deltas merged into this one under backpressure


class DecodeStats(TypedDict):
    bytes: int
    lines: int
    events: int
    blank_lines: int
    invalid_json: int
    non_object: int
    unknown_type: int
    unexpected_shape: int
    oversize_lines: int
    invalid_utf8_lines: int


class Diagnostic(TypedDict):
    line: int  # 1-based line number in the input
    message: str


# =============================================================================
# Runs
# =============================================================================

RunState = Literal["completed", "failed", "cancelled"]
"""How a run ended (``RunResult.state``)."""

CancelKind = Literal["caller", "reader_left", "stalled", "timeout"]
"""Why a run was cancelled (``RunResult.cancel_kind``)."""


class Pressure(TypedDict):
    """Live backpressure statistics of a run (``stream.pressure``, ``RunResult.pressure``)."""

    buffered: int  # items waiting unread now
    bytes: int  # bytes waiting unread now
    peak: int  # the most items ever waiting at once
    peak_bytes: int  # the most bytes ever waiting at once
    coalesced: int  # deltas merged into an earlier buffered delta
    oversize: int  # items admitted although each alone exceeded the byte budget
    stalled: bool  # the run was cancelled because its reader stalled
    dropped_after_terminal: int  # items posted after the terminal: dropped
    refused_terminals: int  # terminal items posted as ordinary items: refused


class UsageTotals(TypedDict, total=False):
    """Token totals of a run (``RunResult.usage``); a counter never reported is absent."""

    promptTokens: int  # input INCLUDING the cached and cache-written shares
    completionTokens: int
    cachedTokens: int  # the cache-read share of promptTokens
    costUsd: float  # only when the harness priced it


class _CancelReasonDict(TypedDict):
    kind: CancelKind
    detail: NotRequired[str]


class ReplayOutcome(TypedDict):
    """How a replay ended: ``{"state": "completed"}``, ``{"state": "failed", "error": ...,
    "detail": ...}`` (``error``: ``harness_error``, ``truncated_output``, ...)."""

    state: RunState
    error: NotRequired[str]  # failed: a short machine-readable cause
    detail: NotRequired[str]  # failed: a sentence for people
    reason: NotRequired[_CancelReasonDict]  # cancelled
