"""Every public name of agentstream, used the way an application would, under ``mypy --strict``.

Run it: ``python python/examples/typed_usage.py tests/golden/claude/s2-bash.input.jsonl claude``;
add the path of ``target/release/fake-harness`` as a third argument to also run the trace as a real
process (run, stream, commands, hooks).
Type-check it: ``mypy --strict python/examples/typed_usage.py`` (the test suite does).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from datetime import timedelta
from pathlib import Path
from typing import cast

import agentstream
from agentstream import (
    AGENTS,
    CHANNELS,
    AgentConfig,
    AgentError,
    AgentMessageChunk,
    AgentstreamError,
    AgentThoughtChunk,
    AgentUsage,
    AlreadyRunningError,
    BackgroundRun,
    CancelKind,
    ContentBlock,
    DecodeLimitError,
    Decoder,
    DecodeStats,
    Diagnostic,
    DiffContent,
    Done,
    Envelope,
    Evolve,
    Handler,
    HarnessNotFoundError,
    HookEvent,
    HookHandler,
    ImageContent,
    InternalError,
    InvalidAgentError,
    InvalidArgumentError,
    InvalidChannelError,
    LifecycleEvent,
    Limits,
    NotRunningError,
    OutputEvent,
    Plan,
    PlanEntry,
    Pressure,
    Replay,
    ReplayOutcome,
    RunCancelledError,
    RunResult,
    RunState,
    RunStream,
    RunTimeoutError,
    SessionUpdate,
    SpawnFailedError,
    Status,
    SyncRunStream,
    TextContent,
    TokenUsage,
    ToolCall,
    ToolCallContent,
    ToolCallLocation,
    ToolCallUpdate,
    UsageTotals,
    UserMessageChunk,
    WrappedContent,
    parse,
    replay,
)
from agentstream.types import (
    AgentName,
    AgentState,
    BrowserInfo,
    ChannelName,
    HookPause,
    HookStatus,
    HookType,
    LifecycleReason,
    PlanEntryPriority,
    PlanEntryStatus,
    SandboxState,
    SessionUpdateKind,
    ToolCallStatus,
    ToolKind,
    UsageScope,
)


def block_text(block: ContentBlock) -> str:
    if block["type"] == "text":
        text: TextContent = block  # narrowed by the "type" literal
        return text["text"]
    image: ImageContent = block
    return f"[image {image['mimeType']} {image.get('uri', '')}]"


def tool_content_text(items: list[ToolCallContent]) -> str:
    out: list[str] = []
    for item in items:
        if item["type"] == "content":
            wrapped: WrappedContent = item
            out.append(block_text(wrapped["content"]))
        else:
            diff: DiffContent = item
            old = diff["oldText"]
            out.append(f"{diff['path']}: {0 if old is None else len(old)} -> {len(diff['newText'])} chars")
    return "\n".join(out)


def describe(event: OutputEvent) -> str:
    update: SessionUpdate = event["update"]
    kind: SessionUpdateKind = update["sessionUpdate"]
    prefix = f"[{event.get('sessionId', '-')} {event.get('messageId', '-')}] "
    if kind == "agent_message_chunk":
        msg = cast(AgentMessageChunk, update)
        return prefix + block_text(msg["content"])
    if kind == "agent_thought_chunk":
        thought = cast(AgentThoughtChunk, update)
        return prefix + "(thinking) " + block_text(thought["content"])
    if kind == "user_message_chunk":
        echo = cast(UserMessageChunk, update)
        return prefix + "(user) " + block_text(echo["content"])
    if kind == "tool_call":
        call = cast(ToolCall, update)
        tool_kind: ToolKind = call["kind"]
        status: ToolCallStatus = call["status"]
        locations: list[ToolCallLocation] = call.get("locations", [])
        where = ", ".join(f"{loc['path']}:{loc.get('line', '?')}" for loc in locations)
        return prefix + f"{call.get('toolName', tool_kind)} {call['title']} [{status}] {where}"
    if kind == "tool_call_update":
        result = cast(ToolCallUpdate, update)
        return prefix + f"{result['toolCallId']} -> {result.get('status')}: {tool_content_text(result.get('content', []))}"
    if kind == "plan":
        plan = cast(Plan, update)
        entries: list[PlanEntry] = plan["entries"]
        marks: dict[PlanEntryStatus, str] = {"pending": " ", "in_progress": ">", "completed": "x"}
        prio: dict[PlanEntryPriority, str] = {"high": "!", "medium": "", "low": "~"}
        return prefix + "; ".join(f"[{marks[e['status']]}]{prio[e['priority']]} {e['content']}" for e in entries)
    if kind == "error":
        error = cast(AgentError, update)
        return prefix + f"harness error (fatal={error['fatal']}): {error['message']}"
    usage_update = cast(AgentUsage, update)
    scope: UsageScope = usage_update["scope"]
    usage: TokenUsage = usage_update["usage"]
    return prefix + f"usage/{scope}: in={usage.get('promptTokens')} out={usage.get('completionTokens')}"


def on_lifecycle(event: LifecycleEvent) -> None:
    reason: LifecycleReason = event["reason"]
    sandbox: SandboxState = event["sandbox"]
    agent: AgentState = event["agent"]
    browser: BrowserInfo | None = event.get("browser")
    live = browser.get("live_url") if browser else None
    print(reason, sandbox, agent, event["sandbox_id"], event["timestamp"], live)


def on_hook(event: HookEvent) -> None:
    kind: HookType = event["type"]
    status: HookStatus = event["status"]
    pause: HookPause | None = event.get("pause")
    print(kind, event["run_id"], event["agent_id"], event["sequence"], status, pause and pause["reason"])


def on_envelope(item: Envelope) -> None:
    channel: ChannelName = item["channel"]
    payload = item["event"]
    if isinstance(payload, str):
        print(item["run_id"], item["sequence"], channel, payload.rstrip(), item.get("coalesced", 0))
    elif channel == "content":
        print(describe(cast(OutputEvent, payload)))
    else:
        on_lifecycle(cast(LifecycleEvent, payload))


async def on_content_async(event: OutputEvent) -> None:
    await asyncio.sleep(0)
    print(describe(event))


def decode_file(path: Path, agent: AgentName | str) -> list[OutputEvent]:
    decoder = Decoder(agent, max_line_bytes=16 * 1024 * 1024, on_oversize="raise")
    events: list[OutputEvent] = []
    try:
        with path.open("rb") as f:
            while chunk := f.read(64 * 1024):
                events.extend(decoder.feed(chunk))
        events.extend(decoder.finish())
    except DecodeLimitError as e:
        events.extend(e.events)
        print(f"line {e.line} too long: {e}", file=sys.stderr)
    stats: DecodeStats = decoder.stats
    diagnostics: list[Diagnostic] = decoder.diagnostics
    print(decoder.agent, decoder.session_id, stats["lines"], stats["events"], len(diagnostics), file=sys.stderr)
    return events


def configure() -> Evolve:
    config = AgentConfig(type="claude", model="sonnet", extra_args=["--verbose"], env={"NO_COLOR": "1"})
    evolve = Evolve(config=config)
    evolve.on("content", lambda event: print(event["update"]["sessionUpdate"]))
    evolve.on("content", on_content_async)
    evolve.on("lifecycle", lambda event: print(event["reason"], event["sandbox"]))
    evolve.on("lifecycle", on_lifecycle)
    evolve.on("stdout", lambda data: print(data, end=""))
    evolve.on("stderr", lambda data: print(f"[ERR] {data}", end=""))
    handlers: tuple[Handler, ...] = evolve.handlers("content")
    assert len(handlers) == 2
    return evolve


def errors_demo() -> None:
    everything: tuple[type[AgentstreamError], ...] = (
        HarnessNotFoundError,
        AlreadyRunningError,
        SpawnFailedError,
        InvalidArgumentError,
        InvalidAgentError,
        InvalidChannelError,
        RunCancelledError,
        RunTimeoutError,
        DecodeLimitError,
        InternalError,
        NotRunningError,
    )
    try:
        Decoder("cursor")
    except InvalidAgentError as e:
        print(e.kind, e.code, e)
    try:
        configure().on("message", print)  # type: ignore[call-overload]
    except ValueError as e:
        assert isinstance(e, everything)
        print(e)


def report(result: RunResult) -> None:
    state: RunState = result.state
    kind: CancelKind | None = result.cancel_kind
    usage: UsageTotals = result.usage
    pressure: Pressure = result.pressure
    print(result.run_id, state, result.ok, result.timed_out, kind, result.exit_code, result.signal,
          result.error, result.cancel_reason, usage.get("promptTokens"), pressure["peak"], result.stats["events"],
          result.last_sequence, result.duration_ms, result.handler_errors, result.diagnostics,
          (result.final_text or "")[:40])


def replay_demo(path: Path, agent: str) -> None:
    r: Replay = replay(agent, path.read_bytes(), run_id="demo")
    outcome: ReplayOutcome = r.outcome
    for item in r.items:
        on_envelope(item)
    for hook in r.hooks:
        on_hook(hook)
    print(outcome["state"], outcome.get("error"), r.state, len(r.events), r.stats["lines"])


async def run_demo(trace: Path, agent: str, fake_harness: Path) -> None:
    prefix = str(trace).removesuffix(".input.jsonl")
    evolve = Evolve(config=AgentConfig(type=agent, bin=fake_harness, env={"AGENTSTREAM_FAKE_TRACE": prefix}))
    evolve.on("content", on_content_async)
    evolve.on("lifecycle", on_lifecycle)
    hook_handler: HookHandler = on_hook
    async with evolve:
        result = await evolve.run("List the files", on_event=hook_handler, timeout_ms=timedelta(minutes=1),
                                  limits=Limits(high_water=64, stall_ms=60_000))
        report(result)
        session: str | None = evolve.get_session()
        status: Status = evolve.status()
        print(session, status.has_run, status.last_status, status.sandbox, status.agent_state)
        handle: BackgroundRun = await evolve.run("and then?", background=True, model="other-model")
        report(await handle)
        evolve.set_session(None)
    stream: RunStream = evolve.stream("again", timeout_ms=60_000)
    async with stream:
        async for envelope in stream:
            on_envelope(envelope)
            print(stream.run_id, stream.pressure["buffered"])
    report(await stream)
    report(await evolve.execute_command(["echo", "hello"]))
    try:
        done: Done = evolve.pause()
        await done
    except NotRunningError as e:
        print(e.kind, e)
    interrupted: bool = evolve.interrupt()
    killed: bool = evolve.kill()
    print(interrupted, killed)


def sync_demo(trace: Path, agent: str, fake_harness: Path) -> None:
    prefix = str(trace).removesuffix(".input.jsonl")
    evolve = Evolve(config=AgentConfig(type=agent, bin=fake_harness, env={"AGENTSTREAM_FAKE_TRACE": prefix}))

    def broken(event: OutputEvent) -> None:
        raise RuntimeError("a bug in a handler")

    evolve.on("content", broken)
    logging.getLogger("agentstream").addHandler(logging.NullHandler())  # the traceback is logged there
    logging.getLogger("agentstream").propagate = False
    result = evolve.run_sync("x")
    report(result)
    assert result.handler_errors > 0
    evolve.off("content")
    with evolve:
        background: BackgroundRun = evolve.run_sync("x", background=True, resume=result.session_id)
        report(background.wait(timeout_ms=60_000))
    stream: SyncRunStream = evolve.stream_sync(prompt="x")
    with stream:
        for envelope in stream:
            on_envelope(envelope)
    report(stream.wait())
    report(evolve.execute_command_sync("echo hi", cwd="/tmp", env={"A": "b"}))


def main(argv: list[str]) -> int:
    first: AgentName = AGENTS[0]
    print(agentstream.__version__, first, AGENTS, CHANNELS)
    configure()
    errors_demo()
    if len(argv) >= 3:
        agent: AgentName | str = argv[2]
        for event in decode_file(Path(argv[1]), agent):
            print(describe(event))
        assert parse(agent, Path(argv[1]).read_bytes()) is not None
    if len(argv) >= 3:
        replay_demo(Path(argv[1]), argv[2])
    if len(argv) == 4:
        asyncio.run(run_demo(Path(argv[1]), argv[2], Path(argv[3])))
        sync_demo(Path(argv[1]), argv[2], Path(argv[3]))
        print("runs: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
