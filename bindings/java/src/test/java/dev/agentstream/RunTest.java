package dev.agentstream;

import static dev.agentstream.TestSupport.GOLDEN;
import static dev.agentstream.TestSupport.assertJsonLists;
import static dev.agentstream.TestSupport.fake;
import static dev.agentstream.TestSupport.jsonEqual;
import static dev.agentstream.TestSupport.jsonLines;
import static dev.agentstream.TestSupport.read;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.agentstream.generated.AgentEvent;
import dev.agentstream.generated.CancelKind;
import dev.agentstream.generated.Channel;
import dev.agentstream.generated.LifecycleReason;
import dev.agentstream.generated.OutputEvent;
import dev.agentstream.generated.RunResult;
import dev.agentstream.generated.RunState;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Real runs of the fake harness (target/release/fake-harness), which replays a golden trace. */
@Timeout(60)
class RunTest {
    static final Set<LifecycleReason> TERMINAL = EnumSet.of(
            LifecycleReason.RUN_COMPLETE, LifecycleReason.RUN_FAILED, LifecycleReason.RUN_INTERRUPTED,
            LifecycleReason.RUN_BACKGROUND_COMPLETE, LifecycleReason.RUN_BACKGROUND_FAILED,
            LifecycleReason.COMMAND_COMPLETE, LifecycleReason.COMMAND_FAILED, LifecycleReason.COMMAND_INTERRUPTED,
            LifecycleReason.COMMAND_BACKGROUND_COMPLETE, LifecycleReason.COMMAND_BACKGROUND_FAILED);

    /** Records every handler call: what, on which thread, and whether two ever overlapped. */
    static final class Recorder {
        final List<Event> events = new CopyOnWriteArrayList<>();
        final Set<Thread> threads = Collections.synchronizedSet(new HashSet<>());
        final AtomicBoolean inside = new AtomicBoolean();
        final AtomicBoolean overlapped = new AtomicBoolean();

        void record(Event e) {
            if (!inside.compareAndSet(false, true)) {
                overlapped.set(true);
            }
            threads.add(Thread.currentThread());
            events.add(e);
            inside.set(false);
        }

        void attach(Evolve evolve) {
            for (Channel c : Channel.values()) {
                evolve.on(c.wire(), this::record);
            }
        }

        void onHook(AgentEvent hook) {
            record(new Event.Hook(hook));
        }

        List<LifecycleReason> reasons() {
            return events.stream().filter(e -> e instanceof Event.Lifecycle).map(e -> e.lifecycle().reason()).toList();
        }

        String text(Channel c) {
            StringBuilder sb = new StringBuilder();
            for (Event e : events) {
                if (e instanceof Event.Text t && t.channel() == c) {
                    sb.append(t.text());
                }
            }
            return sb.toString();
        }

        List<AgentEvent> hooks() {
            return events.stream().filter(e -> e instanceof Event.Hook).map(Event::hook).toList();
        }

        List<OutputEvent> content() {
            return events.stream().filter(e -> e instanceof Event.Content).map(Event::content).toList();
        }

        /** Exactly one terminal lifecycle item, and it is the last item. */
        void oneTerminalLast() {
            int terminals = 0;
            int terminalAt = -1;
            int lastItem = -1;
            for (int i = 0; i < events.size(); i++) {
                Event e = events.get(i);
                if (e instanceof Event.Hook) {
                    continue;
                }
                lastItem = i;
                if (e instanceof Event.Lifecycle l && TERMINAL.contains(l.lifecycle().reason())) {
                    terminals++;
                    terminalAt = i;
                }
            }
            assertEquals(1, terminals, "terminal items");
            assertEquals(lastItem, terminalAt, "the terminal is the last item");
            assertFalse(overlapped.get(), "handlers were called concurrently");
        }
    }

    private static void awaitIdle(Evolve evolve) throws InterruptedException {
        for (int i = 0; i < 500 && evolve.status().activeRunId() != null; i++) {
            Thread.sleep(10);
        }
        assertNull(evolve.status().activeRunId(), "the run ended");
    }

    @Test
    void handlersGetEveryChannelInSequenceOrderWithOneTerminalLast() throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s2-bash"))) {
            Recorder rec = new Recorder();
            rec.attach(evolve);
            RunResult res = evolve.run(RunOptions.builder().prompt("List the files").onEvent(rec::onHook).build())
                    .get(30, TimeUnit.SECONDS);

            assertEquals(RunState.COMPLETED, res.state());
            assertEquals("66c0abf3-0bc5-46a7-8e73-4fef192280ea", res.sessionId());
            assertNotNull(res.finalText());
            assertEquals(0, res.handlerErrors());
            // The first run announces the environment (sandbox_ready) before run_start.
            assertEquals(List.of(LifecycleReason.SANDBOX_READY, LifecycleReason.RUN_START, LifecycleReason.RUN_COMPLETE), rec.reasons());
            rec.oneTerminalLast();
            assertEquals(1, rec.threads.size(), "one delivery thread");
            assertFalse(rec.threads.contains(Thread.currentThread()), "not the caller's thread");

            // With a handler on every channel the n-th item is sequence n-1; hooks follow their item;
            // content follows its stdout line.
            long items = 0;
            Channel prev = null;
            for (Event e : rec.events) {
                if (e instanceof Event.Hook h) {
                    assertTrue(items > 0 && h.sequence() <= items - 1, "hook " + h.hook().type() + " after its item");
                    assertEquals(res.runId(), h.runId());
                    continue;
                }
                assertEquals(items, e.sequence());
                assertEquals(res.runId(), e.runId());
                Channel ch = e instanceof Event.Content ? Channel.CONTENT : e instanceof Event.Lifecycle ? Channel.LIFECYCLE : ((Event.Text) e).channel();
                if (ch == Channel.CONTENT) {
                    assertTrue(prev == Channel.STDOUT || prev == Channel.CONTENT, "content after " + prev);
                }
                prev = ch;
                items++;
            }
            assertEquals(res.lastSequence(), items - 1);

            assertJsonLists("content", jsonLines(GOLDEN.resolve("claude/s2-bash.expected.jsonl")), rec.content());
            assertEquals(new String(read(GOLDEN.resolve("claude/s2-bash.input.jsonl")), StandardCharsets.UTF_8), rec.text(Channel.STDOUT));
            assertEquals(new String(read(GOLDEN.resolve("claude/s2-bash.stderr.txt")), StandardCharsets.UTF_8), rec.text(Channel.STDERR));

            // The golden hook view (run id, timestamps and sequences differ in a live run).
            List<Object> golden = jsonLines(GOLDEN.resolve("claude/s2-bash.hooks.jsonl"));
            List<AgentEvent> hooks = rec.hooks();
            assertEquals(golden.size(), hooks.size(), "hooks");
            for (int i = 0; i < golden.size(); i++) {
                AgentEvent want = Json.convert(golden.get(i), AgentEvent.class);
                AgentEvent got = hooks.get(i);
                assertEquals(want.type(), got.type());
                assertEquals(want.status(), got.status());
                assertEquals(want.agentId(), got.agentId());
                assertTrue(jsonEqual(want.details(), got.details()), got.type() + ": " + got.details() + " vs " + want.details());
            }
            assertEquals("run.started", hooks.get(0).type());
            assertEquals("run.completed", hooks.get(hooks.size() - 1).type());
        }
    }

    @Test
    void aStreamHandsOverEveryDeliveryAndEndsAfterTheTerminal() {
        try (Evolve evolve = new Evolve(fake("codex", "codex/s2-bash"))) {
            Recorder handlers = new Recorder();
            handlers.attach(evolve); // a stream does not call them
            List<Event> got;
            RunResult res;
            try (RunStream stream = evolve.stream(RunOptions.builder().prompt("x").hooks(true).build())) {
                got = stream.stream().toList();
                res = stream.result();
                assertFalse(stream.hasNext());
                assertThrows(java.util.NoSuchElementException.class, stream::next);
            }
            assertTrue(handlers.events.isEmpty(), "the Evolve's handlers are not called by a stream");
            assertEquals(RunState.COMPLETED, res.state());
            long seq = 0;
            for (Event e : got) {
                if (!(e instanceof Event.Hook)) {
                    assertEquals(seq++, e.sequence(), "gapless");
                }
            }
            assertEquals(res.lastSequence(), seq - 1);
            assertEquals(LifecycleReason.RUN_COMPLETE, got.stream().filter(e -> !(e instanceof Event.Hook)).reduce((a, b) -> b).orElseThrow().lifecycle().reason());
            assertEquals("run.completed", got.get(got.size() - 1).hook().type());
            List<OutputEvent> content = got.stream().filter(e -> e instanceof Event.Content).map(Event::content).toList();
            assertJsonLists("content", jsonLines(GOLDEN.resolve("codex/s2-bash.expected.jsonl")), content);
        }
    }

    @Test
    void leavingAStreamEarlyCancelsTheRun() {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s2-bash").withEnv("AGENTSTREAM_FAKE_DELAY_MS", "200"))) {
            RunStream stream = evolve.stream(RunOptions.prompt("x"));
            assertTrue(stream.hasNext());
            stream.next();
            stream.close();
            RunResult res = stream.run().result().join();
            assertEquals(RunState.CANCELLED, res.state());
            assertEquals(CancelKind.READER_LEFT, res.cancelKind());
            assertFalse(stream.hasNext());
        }
    }

    @Test
    void aDeliveryHasNextAnnouncedIsStillReturnedAfterAClose() {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s1-text").withEnv("AGENTSTREAM_FAKE_HANG", "1"))) {
            RunStream stream = evolve.stream(RunOptions.builder().prompt("x").killGrace(java.time.Duration.ofMillis(200)).build());
            assertTrue(stream.hasNext());
            // What another thread's close() between this reader's hasNext() and next() does.
            stream.close();
            assertNotNull(stream.next(), "the announced delivery");
            assertFalse(stream.hasNext(), "nothing after it: the rest was discarded");
            assertEquals(CancelKind.READER_LEFT, stream.run().result().join().cancelKind());
        }
    }

    @Test
    void aStreamDroppedBeforeItsEndLeavesItsRunOnceCollected() throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s1-text").withEnv("AGENTSTREAM_FAKE_HANG", "1"))) {
            Run run = readOneAndDrop(evolve.stream(RunOptions.prompt("x")));
            for (int i = 0; i < 500 && !run.isDone(); i++) {
                System.gc();
                Thread.sleep(20);
            }
            assertTrue(run.isDone(), "the dropped stream's run was left (cancelled) once the stream was collected");
            RunResult res = run.result().join();
            assertEquals(RunState.CANCELLED, res.state());
            assertEquals(CancelKind.READER_LEFT, res.cancelKind());
            awaitIdle(evolve); // the hanging harness was stopped, the run freed
        }
    }

    /** Reads one delivery of {@code stream} and lets the stream go (no close). */
    private static Run readOneAndDrop(RunStream stream) {
        assertTrue(stream.hasNext());
        stream.next();
        return stream.run();
    }

    @Test
    void aDroppedBudgetIsFreedWithoutEndingWhatUsesIt() throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s1-text"))) {
            java.lang.foreign.MemorySegment[] handle = new java.lang.foreign.MemorySegment[1];
            java.lang.ref.WeakReference<Budget> dropped = setNewBudget(evolve, handle);
            for (int i = 0; i < 500 && !freed(handle[0]); i++) {
                System.gc();
                Thread.sleep(10);
            }
            assertNull(dropped.get(), "the Budget was collected");
            assertTrue(freed(handle[0]), "its native budget was freed");
            // The session holds the budget itself: runs still take their permit from it.
            assertEquals(RunState.COMPLETED, evolve.run(RunOptions.prompt("x")).get(30, TimeUnit.SECONDS).state());
        }
    }

    private static java.lang.ref.WeakReference<Budget> setNewBudget(Evolve evolve, java.lang.foreign.MemorySegment[] handle) {
        Budget budget = new Budget(1 << 20, 1);
        evolve.setBudget(budget);
        handle[0] = budget.handle;
        return new java.lang.ref.WeakReference<>(budget);
    }

    /** Whether the native budget {@code handle} was freed (the library checks handles: no dangling read). */
    private static boolean freed(java.lang.foreign.MemorySegment handle) {
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            java.lang.foreign.MemorySegment out = arena.allocate(java.lang.foreign.ValueLayout.JAVA_LONG);
            Native.check(() -> (int) Native.BUDGET_ACTIVE.invokeExact(handle, out));
            return false;
        } catch (InvalidHandleException e) {
            return true;
        }
    }

    @Test
    void removingAHandlerWaitsForItsCallInProgressAndNoCallStartsAfter() throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s2-bash"))) {
            CountDownLatch inCall = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();
            Subscription sub = evolve.on("content", e -> {
                calls.incrementAndGet();
                inCall.countDown();
                try {
                    release.await();
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
            });
            Run run = evolve.start(RunOptions.prompt("x"));
            assertTrue(inCall.await(10, TimeUnit.SECONDS));
            Thread closer = new Thread(sub::close);
            closer.start();
            closer.join(300);
            assertTrue(closer.isAlive(), "close waits for the call in progress");
            release.countDown();
            closer.join(10_000);
            assertFalse(closer.isAlive());
            int atClose = calls.get();
            assertEquals(RunState.COMPLETED, run.result().get(30, TimeUnit.SECONDS).state());
            assertEquals(atClose, calls.get(), "no call started after close returned");
        }
    }

    @Test
    void aReaderWhoseStreamAnotherThreadClosesMayWaitForTheResult() throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s1-text").withEnv("AGENTSTREAM_FAKE_HANG", "1"))) {
            RunStream stream = evolve.stream(RunOptions.builder().prompt("x").killGrace(java.time.Duration.ofMillis(200)).build());
            CountDownLatch reading = new CountDownLatch(1);
            CompletableFuture<RunResult> waited = new CompletableFuture<>();
            Thread reader = new Thread(() -> {
                try {
                    while (stream.hasNext()) {
                        stream.next();
                        reading.countDown();
                    }
                    waited.complete(stream.run().result().join()); // the closer reads the rest: not Busy
                } catch (Throwable t) {
                    waited.completeExceptionally(t);
                }
            });
            reader.start();
            assertTrue(reading.await(10, TimeUnit.SECONDS));
            stream.close();
            assertEquals(RunState.CANCELLED, waited.get(30, TimeUnit.SECONDS).state());
        }
    }

    @Test
    void theStreamsReaderWaitingForTheResultBeforeTheEndIsBusyNotAHang() {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s2-bash"))) {
            try (RunStream stream = evolve.stream(RunOptions.prompt("x"))) {
                assertTrue(stream.hasNext());
                stream.next();
                // Nobody else reads: this thread would wait for itself.
                BusyException busy = assertThrows(BusyException.class, () -> stream.run().result().join());
                assertTrue(busy.getMessage().contains("RunStream.result()"), busy.getMessage());
                assertThrows(BusyException.class, () -> stream.run().result().get(1, TimeUnit.SECONDS));
                assertEquals(RunState.COMPLETED, stream.result().state(), "reading the rest gives the result");
                assertEquals(RunState.COMPLETED, stream.run().result().join().state(), "and the future has it");
            }
        }
    }

    @Test
    void cancellingTheFutureCancelsTheRunThroughTheCore() throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s1-text").withEnv("AGENTSTREAM_FAKE_HANG", "1"))) {
            CountDownLatch started = new CountDownLatch(1);
            evolve.on("lifecycle", e -> started.countDown());
            Run run = evolve.start(RunOptions.prompt("x"));
            CompletableFuture<RunResult> future = run.result();
            assertTrue(started.await(10, TimeUnit.SECONDS));
            assertEquals(run.id(), evolve.status().activeRunId());
            assertFalse(future.isDone(), () -> "the run ended early: " + future.handle((r, t) -> r != null ? Json.write(r) : String.valueOf(t)).join());
            assertTrue(future.cancel(true));
            assertTrue(future.isCancelled());
            assertThrows(CancellationException.class, future::join);
            awaitIdle(evolve); // the harness was stopped by the core, not left hanging
            assertEquals(RunState.CANCELLED, evolve.status().lastStatus());
        }
    }

    @Test
    void aStreamsOnEventThatReadsTheStreamOrWaitsForTheRunIsBusy() {
        try (Evolve evolve = new Evolve(fake("codex", "codex/s2-bash"))) {
            RunStream[] stream = new RunStream[1];
            List<Throwable> inHandler = new CopyOnWriteArrayList<>();
            RunOptions options = RunOptions.builder().prompt("x").hooks(true).onEvent(hook -> {
                try {
                    if (inHandler.size() % 2 == 0) {
                        stream[0].result(); // reads the stream from inside its own hand-out
                    } else {
                        stream[0].run().result().join(); // waits for the run it is part of
                    }
                } catch (Throwable t) {
                    inHandler.add(t);
                }
            }).build();
            try (RunStream s = evolve.stream(options)) {
                stream[0] = s;
                List<Event> got = s.stream().toList();
                assertEquals(RunState.COMPLETED, s.result().state());
                assertFalse(got.isEmpty());
            }
            assertTrue(inHandler.size() > 2, inHandler.toString());
            assertTrue(inHandler.stream().allMatch(t -> t instanceof BusyException), inHandler.toString());
        }
    }

    @Test
    void completingTheFutureAnyOtherWayCancelsTheRunToo() throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s1-text").withEnv("AGENTSTREAM_FAKE_HANG", "1"))) {
            evolve.on("lifecycle", e -> { });
            Run run = evolve.start(RunOptions.builder().prompt("x").killGrace(Duration.ofMillis(200)).build());
            CompletableFuture<RunResult> future = run.result().orTimeout(300, TimeUnit.MILLISECONDS);
            CompletionException e = assertThrows(CompletionException.class, future::join);
            assertTrue(e.getCause() instanceof java.util.concurrent.TimeoutException, String.valueOf(e.getCause()));
            awaitIdle(evolve); // the run was cancelled, not left going on unseen
            assertEquals(RunState.CANCELLED, evolve.status().lastStatus());
        }
    }

    @Test
    void completingTheFutureAsynchronouslyCancelsTheRunToo() throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s1-text").withEnv("AGENTSTREAM_FAKE_HANG", "1"))) {
            evolve.on("lifecycle", e -> { });
            Run run = evolve.start(RunOptions.builder().prompt("x").killGrace(Duration.ofMillis(200)).build());
            run.result().completeAsync(() -> null).get(10, TimeUnit.SECONDS);
            awaitIdle(evolve); // completeAsync bypassed complete(): the run went on unseen
            assertEquals(RunState.CANCELLED, evolve.status().lastStatus());
        }
    }

    @Test
    void aStreamClosedByItsOnEventHandsOverNothingMore() throws Exception {
        try (Evolve evolve = new Evolve(fake("codex", "codex/s2-bash").withEnv("AGENTSTREAM_FAKE_HANG", "1"))) {
            RunStream[] stream = new RunStream[1];
            List<AgentEvent> hooks = new CopyOnWriteArrayList<>();
            List<HandlerError> reports = new CopyOnWriteArrayList<>();
            evolve.onHandlerError(reports::add);
            RunOptions options = RunOptions.builder().prompt("x").hooks(true).killGrace(Duration.ofMillis(200)).onEvent(hook -> {
                hooks.add(hook);
                if (hooks.size() == 2) {
                    stream[0].close();
                    throw new IllegalStateException("thrown after closing");
                }
            }).build();
            try (RunStream s = evolve.stream(options)) {
                stream[0] = s;
                List<Event> got = s.stream().toList(); // the hooks come in the batches the events do
                assertEquals(2, hooks.size(), "no onEvent after close(): " + hooks);
                assertTrue(got.stream().filter(e -> e instanceof Event.Hook).count() <= 1, got.toString());
                assertEquals(CancelKind.READER_LEFT, s.run().result().get(10, TimeUnit.SECONDS).cancelKind());
            }
            assertEquals(1, reports.size(), "the failure after the close is reported: " + reports);
        }
    }

    @Test
    void optionsBuiltEarlierKeepTheirEnvironmentAndPrintNoValues() {
        RunOptions.Builder builder = RunOptions.builder().prompt("x").env("A", "1");
        RunOptions first = builder.build();
        builder.env("SECRET_TOKEN", "hunter2");
        assertFalse(first.toString().contains("SECRET_TOKEN"), first.toString());
        String second = builder.build().toString();
        assertTrue(second.contains("SECRET_TOKEN") && !second.contains("hunter2"), second);
    }

    @Test
    void waitingForARunFromItsOwnHandlerIsBusy() throws Exception {
        waitingFromItsOwnHandlerIsBusy(run -> run.result().join());
    }

    @Test
    void waitingForAFutureDerivedFromTheResultFromItsOwnHandlerIsBusyToo() throws Exception {
        waitingFromItsOwnHandlerIsBusy(run -> run.result().thenApply(RunResult::state).thenApply(String::valueOf).join());
    }

    /** A content handler that waits for its own run with {@code wait}: each wait is a BusyException. */
    private void waitingFromItsOwnHandlerIsBusy(java.util.function.Consumer<Run> wait) throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s2-bash"))) {
            Run[] run = new Run[1];
            List<Throwable> inHandler = new java.util.concurrent.CopyOnWriteArrayList<>();
            CountDownLatch started = new CountDownLatch(1);
            evolve.on("content", e -> {
                try {
                    started.await();
                    wait.accept(run[0]);
                } catch (Throwable t) {
                    inHandler.add(t);
                }
            });
            run[0] = evolve.start(RunOptions.prompt("x"));
            started.countDown();
            RunResult res = run[0].result().get(30, TimeUnit.SECONDS);
            assertEquals(RunState.COMPLETED, res.state());
            assertFalse(inHandler.isEmpty());
            assertTrue(inHandler.stream().allMatch(t -> t instanceof BusyException), inHandler.toString());
        }
    }

    @Test
    void cancelWithAReasonEscalatesToSigkillForAHarnessIgnoringSigterm() throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s1-text")
                .withEnv("AGENTSTREAM_FAKE_HANG", "1").withEnv("AGENTSTREAM_FAKE_IGNORE_SIGTERM", "1"))) {
            Recorder rec = new Recorder();
            rec.attach(evolve);
            Run run = evolve.start(RunOptions.builder().prompt("x").killGrace(Duration.ofMillis(200)).build());
            while (rec.events.size() < 3) {
                Thread.sleep(5);
            }
            run.cancel("the user pressed stop");
            run.cancel("a second reason does not replace the first");
            RunResult res = run.result().get(20, TimeUnit.SECONDS);
            assertEquals(RunState.CANCELLED, res.state());
            assertEquals(CancelKind.CALLER, res.cancelKind());
            assertTrue(res.cancelReason().contains("the user pressed stop"), res.cancelReason());
            assertEquals(9, res.signal());
            assertEquals(LifecycleReason.RUN_INTERRUPTED, rec.reasons().get(rec.reasons().size() - 1));
            rec.oneTerminalLast();
            run.cancel("after the end: nothing happens");
            assertEquals(res.pressure(), run.pressure());
        }
    }

    @Test
    void aThrowingHandlerIsCountedReportedOnceWithItsStackAndTheRunGoesOn() throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s2-bash"))) {
            List<HandlerError> reports = new CopyOnWriteArrayList<>();
            evolve.onHandlerError(reports::add);
            AtomicInteger thrown = new AtomicInteger();
            evolve.on("content", e -> {
                thrown.incrementAndGet();
                throw new IllegalStateException("boom " + e.sequence());
            });
            Recorder rec = new Recorder();
            evolve.on("content", rec::record);
            AtomicInteger hooks = new AtomicInteger();
            RunResult res = evolve.run(RunOptions.builder().prompt("x").onEvent(h -> {
                hooks.incrementAndGet();
                throw new StackOverflowError("not even this crashes anything");
            }).build()).get(30, TimeUnit.SECONDS);

            assertEquals(RunState.COMPLETED, res.state());
            int contentEvents = jsonLines(GOLDEN.resolve("claude/s2-bash.expected.jsonl")).size();
            assertEquals(contentEvents, thrown.get());
            assertEquals(contentEvents, rec.content().size(), "the next handler still got every event");
            assertEquals(contentEvents + hooks.get(), res.handlerErrors(), "every failure counted");
            assertEquals(2, reports.size(), "one report per failing handler: " + reports);
            HandlerError content = reports.stream().filter(r -> r.channel().equals("content")).findFirst().orElseThrow();
            assertTrue(content.error() instanceof IllegalStateException && content.error().getMessage().startsWith("boom"));
            assertTrue(content.error().getStackTrace().length > 0, "with its stack");
            assertEquals(res.runId(), content.runId());
            HandlerError hook = reports.stream().filter(r -> r.channel().equals("on_event")).findFirst().orElseThrow();
            assertTrue(hook.error() instanceof StackOverflowError);
        }
    }

    @Test
    void anExceptionWhoseMessageCannotBeReadIsCountedAndTheRunGoesOn() throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s1-text"))) {
            List<HandlerError> reports = new CopyOnWriteArrayList<>();
            evolve.onHandlerError(reports::add);
            evolve.on("stdout", e -> {
                throw new RuntimeException() {
                    @Override
                    public String getMessage() {
                        throw new IllegalStateException("no message for you");
                    }
                };
            });
            // Before, describing the exception threw, and the run was cancelled.
            RunResult res = evolve.run(RunOptions.prompt("x")).get(30, TimeUnit.SECONDS);
            assertEquals(RunState.COMPLETED, res.state());
            assertTrue(res.handlerErrors() > 1, "every failure counted");
            assertEquals(1, reports.size());
            assertTrue(reports.get(0).message().contains("its message could not be read: java.lang.IllegalStateException"),
                    reports.get(0).message());
        }
    }

    @Test
    void theDefaultReportLogsThroughSystemLoggerAndAFailingReporterIsSurvived() throws Exception {
        java.util.logging.Logger jul = java.util.logging.Logger.getLogger("dev.agentstream");
        List<java.util.logging.LogRecord> logged = new CopyOnWriteArrayList<>();
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                logged.add(r);
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        jul.addHandler(capture);
        try (Evolve evolve = new Evolve(fake("claude", "claude/s1-text"))) {
            evolve.on("stdout", e -> {
                throw new RuntimeException("handler");
            });
            RunResult res = evolve.run(RunOptions.prompt("x")).get(30, TimeUnit.SECONDS);
            assertEquals(RunState.COMPLETED, res.state());
            assertTrue(res.handlerErrors() > 1, "every failure counted");
            assertEquals(1, logged.size(), "logged once per handler");
            assertEquals(java.util.logging.Level.SEVERE, logged.get(0).getLevel());
            assertEquals("handler", logged.get(0).getThrown().getMessage());

            // A reporter that throws does not stop the run either (the failure is logged instead).
            evolve.onHandlerError(f -> {
                throw new RuntimeException("the reporter fails too");
            });
            assertEquals(RunState.COMPLETED, evolve.run(RunOptions.prompt("x")).get(30, TimeUnit.SECONDS).state());
            assertEquals(2, logged.size());
        } finally {
            jul.removeHandler(capture);
        }
    }

    @Test
    void pauseStopsTheOutputUntilResume() throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s2-bash").withEnv("AGENTSTREAM_FAKE_DELAY_MS", "100"))) {
            Recorder rec = new Recorder();
            rec.attach(evolve);
            Run run = evolve.start(RunOptions.prompt("x"));
            while (rec.text(Channel.STDOUT).isEmpty()) {
                Thread.sleep(5);
            }
            evolve.pause();
            while (!rec.reasons().contains(LifecycleReason.SANDBOX_PAUSE)) {
                Thread.sleep(5);
            }
            Thread.sleep(300); // a line in flight may still arrive
            int before = rec.text(Channel.STDOUT).length();
            Thread.sleep(500);
            assertEquals(before, rec.text(Channel.STDOUT).length(), "no output while paused");
            assertEquals(dev.agentstream.generated.SandboxState.PAUSED, evolve.status().sandbox());
            evolve.resume();
            RunResult res = run.result().get(30, TimeUnit.SECONDS);
            assertEquals(RunState.COMPLETED, res.state());
            assertTrue(rec.reasons().contains(LifecycleReason.SANDBOX_RESUME));
            assertEquals(new String(read(GOLDEN.resolve("claude/s2-bash.input.jsonl")), StandardCharsets.UTF_8), rec.text(Channel.STDOUT));
            rec.oneTerminalLast();
            assertThrows(NotRunningException.class, evolve::pause);
            assertThrows(NotRunningException.class, evolve::resume);
        }
    }

    @Test
    void interruptAndKillSayWhetherTheyDidAnything() throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s1-text").withEnv("AGENTSTREAM_FAKE_HANG", "1"))) {
            assertFalse(evolve.interrupt());
            assertFalse(evolve.kill());
            Recorder rec = new Recorder();
            rec.attach(evolve);
            Run run = evolve.start(RunOptions.prompt("x"));
            while (rec.events.size() < 2) {
                Thread.sleep(5);
            }
            AlreadyRunningException busy = assertThrows(AlreadyRunningException.class, () -> evolve.run(RunOptions.prompt("y")));
            assertTrue(busy instanceof IllegalStateException);
            assertTrue(evolve.interrupt());
            RunResult res = run.result().get(20, TimeUnit.SECONDS);
            assertEquals(RunState.CANCELLED, res.state());
            assertFalse(evolve.interrupt());

            Recorder second = new Recorder();
            evolve.off("lifecycle");
            evolve.on("lifecycle", second::record);
            Run killed = evolve.start(RunOptions.prompt("x"));
            while (second.events.size() < 1) {
                Thread.sleep(5);
            }
            assertTrue(evolve.kill());
            RunResult k = killed.result().get(20, TimeUnit.SECONDS);
            assertEquals(RunState.CANCELLED, k.state());
            assertTrue(second.reasons().contains(LifecycleReason.SANDBOX_KILLED), second.reasons().toString());
            second.oneTerminalLast();
        }
    }

    @Test
    void aRunWithoutHandlersIsAwaitedOnly() throws Exception {
        try (Evolve evolve = new Evolve(fake("gemini", "gemini/s1-text"))) {
            RunResult res = evolve.run(RunOptions.prompt("x")).get(30, TimeUnit.SECONDS);
            assertEquals(RunState.COMPLETED, res.state());
            assertNotNull(res.finalText());
            assertEquals(RunState.COMPLETED, evolve.status().lastStatus());
        }
    }

    @Test
    void aBackgroundRunReturnsAtOnceAndEndsWithTheBackgroundTerminal() throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s1-text").withEnv("AGENTSTREAM_FAKE_DELAY_MS", "20"))) {
            Recorder rec = new Recorder();
            evolve.on("lifecycle", rec::record);
            Run run = evolve.start(RunOptions.builder().prompt("x").background(true).cwd(java.nio.file.Path.of("/")).build());
            assertFalse(run.isDone(), "start returns before the run ends");
            RunResult res = run.result().get(30, TimeUnit.SECONDS);
            assertEquals(RunState.COMPLETED, res.state());
            assertEquals(LifecycleReason.RUN_BACKGROUND_COMPLETE, rec.reasons().get(rec.reasons().size() - 1));
        }
    }

    @Test
    void aCommandRunStreamsItsOutput() throws Exception {
        try (Evolve evolve = new Evolve(AgentConfig.of("claude"))) {
            Recorder rec = new Recorder();
            rec.attach(evolve);
            RunResult res = evolve.run(RunOptions.builder().command("sh", "-c", "echo hello; echo oops >&2; exit 3").build())
                    .get(30, TimeUnit.SECONDS);
            assertEquals(RunState.FAILED, res.state());
            assertEquals(3, res.exitCode());
            assertEquals("hello\n", rec.text(Channel.STDOUT));
            assertEquals("oops\n", rec.text(Channel.STDERR));
            assertTrue(rec.content().isEmpty());
            assertEquals(LifecycleReason.COMMAND_START, rec.reasons().get(1));
            assertEquals(LifecycleReason.COMMAND_FAILED, rec.reasons().get(rec.reasons().size() - 1));
            rec.oneTerminalLast();
        }
    }

    @Test
    void theHarnessRunsUnderAnExecdSupervisorNotACopyOfTheJvm() throws Exception {
        // The harness's parent is the supervisor: the library run as a program (its command
        // line names it and the supervisor marker), not a fork of this JVM, whose start would
        // copy the JVM's page tables on every run.
        try (Evolve evolve = new Evolve(AgentConfig.of("claude"))) {
            Recorder rec = new Recorder();
            rec.attach(evolve);
            RunResult res = evolve.run(RunOptions.builder()
                            .command("sh", "-c", "tr '\\0' ' ' < /proc/$PPID/cmdline; echo; cat /proc/$PPID/comm")
                            .build())
                    .get(30, TimeUnit.SECONDS);
            assertEquals(RunState.COMPLETED, res.state());
            String[] lines = rec.text(Channel.STDOUT).split("\n");
            assertTrue(lines[0].contains("libagentstream") && lines[0].contains("--agentstream-supervisor-1"), lines[0]);
            assertEquals("agentstream-sup", lines[1]);
        }
    }

    @Test
    void successiveRunsContinueTheConversation() throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s2-bash"))) {
            List<AgentEvent> first = new CopyOnWriteArrayList<>();
            evolve.run(RunOptions.builder().prompt("first").onEvent(first::add).build()).get(30, TimeUnit.SECONDS);
            assertEquals("run.started", first.get(0).type());
            assertEquals("66c0abf3-0bc5-46a7-8e73-4fef192280ea", evolve.session().orElseThrow());

            List<AgentEvent> second = new CopyOnWriteArrayList<>();
            evolve.run(RunOptions.builder().prompt("second").onEvent(second::add).build()).get(30, TimeUnit.SECONDS);
            assertEquals("run.resumed", second.get(0).type());

            evolve.setSession(null);
            assertTrue(evolve.session().isEmpty());
            List<AgentEvent> fresh = new CopyOnWriteArrayList<>();
            evolve.run(RunOptions.builder().prompt("fresh").onEvent(fresh::add).build()).get(30, TimeUnit.SECONDS);
            assertEquals("run.started", fresh.get(0).type());

            Status status = evolve.status();
            assertTrue(status.hasRun());
            assertEquals(RunState.COMPLETED, status.lastStatus());
            assertEquals("claude", status.agent().wire());
        }
    }

    @Test
    void handlersAddedDuringARunGetTheRestAndRemovedOnesNothing() throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s2-bash").withEnv("AGENTSTREAM_FAKE_DELAY_MS", "30"))) {
            List<Event> early = new CopyOnWriteArrayList<>();
            Subscription sub = evolve.on("stdout", early::add);
            List<Event> late = new CopyOnWriteArrayList<>();
            CountDownLatch firstLine = new CountDownLatch(1);
            evolve.on("stdout", e -> firstLine.countDown());
            Run run = evolve.start(RunOptions.prompt("x"));
            assertTrue(firstLine.await(10, TimeUnit.SECONDS));
            sub.close();
            assertTrue(sub.isRemoved());
            int seenBefore = early.size();
            evolve.on("stdout", late::add);
            run.result().get(30, TimeUnit.SECONDS);
            assertEquals(seenBefore, early.size(), "no call after close returned (one in flight was waited for)");
            assertFalse(late.isEmpty(), "a handler added during the run got the rest");
            int lines = new String(read(GOLDEN.resolve("claude/s2-bash.input.jsonl")), StandardCharsets.UTF_8).split("\n").length;
            assertTrue(late.size() < lines);
        }
    }

    @Test
    void aHarnessDyingMidLineFails() throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s2-bash").withEnv("AGENTSTREAM_FAKE_DIE_MID_LINE", "1"))) {
            Recorder rec = new Recorder();
            rec.attach(evolve);
            RunResult res = evolve.run(RunOptions.prompt("x")).get(30, TimeUnit.SECONDS);
            assertEquals(RunState.FAILED, res.state());
            assertEquals(9, res.signal());
            assertEquals(LifecycleReason.RUN_FAILED, rec.reasons().get(rec.reasons().size() - 1));
            rec.oneTerminalLast();
        }
    }

    @Test
    void aTimeoutStopsTheRun() throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s1-text").withEnv("AGENTSTREAM_FAKE_HANG", "1"))) {
            List<AgentEvent> hooks = new CopyOnWriteArrayList<>();
            RunResult res = evolve.run(RunOptions.builder().prompt("x").timeout(Duration.ofMillis(300)).onEvent(hooks::add).build())
                    .get(30, TimeUnit.SECONDS);
            assertEquals(RunState.CANCELLED, res.state());
            assertEquals(CancelKind.TIMEOUT, res.cancelKind());
            assertEquals("run.stopped", hooks.get(hooks.size() - 1).type());
        }
    }

    @Test
    void perRunOverridesReachTheHarness() throws Exception {
        java.nio.file.Path argv = java.nio.file.Files.createTempFile("agentstream-argv", ".json");
        try (Evolve evolve = new Evolve(fake("codex", "codex/s1-text").withModel("base-model")
                .withEnv("AGENTSTREAM_FAKE_ARGV_FILE", argv.toString()))) {
            evolve.run(RunOptions.builder().prompt("x").model("run-model").env("EXTRA", "1").build()).get(30, TimeUnit.SECONDS);
            List<?> args = (List<?>) Json.parse(new String(read(argv), StandardCharsets.UTF_8));
            int i = args.indexOf("-m");
            assertNotEquals(-1, i, args.toString());
            assertEquals("run-model", args.get(i + 1));
            assertFalse(args.contains("base-model"));
        } finally {
            java.nio.file.Files.deleteIfExists(argv);
        }
    }

    @Test
    void aBudgetSharedByTwoEvolvesLimitsConcurrentRuns() throws Exception {
        try (Budget budget = new Budget(1 << 20, 1);
                Evolve a = new Evolve(fake("claude", "claude/s1-text").withEnv("AGENTSTREAM_FAKE_HANG", "1"));
                Evolve b = new Evolve(fake("claude", "claude/s1-text"))) {
            a.setBudget(budget);
            b.setBudget(budget);
            Run hanging = a.start(RunOptions.prompt("x"));
            assertEquals(1, budget.active());
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> b.run(RunOptions.prompt("y")));
            assertTrue(e.getMessage().contains("budget") || e.getMessage().contains("permit"), e.getMessage());
            hanging.cancel();
            hanging.result().get(20, TimeUnit.SECONDS);
            assertEquals(RunState.COMPLETED, b.run(RunOptions.prompt("y")).get(30, TimeUnit.SECONDS).state());
        }
    }

    @Test
    void closingTheEvolveKillsItsRunAndTheRunStillReports() throws Exception {
        Evolve evolve = new Evolve(fake("claude", "claude/s1-text").withEnv("AGENTSTREAM_FAKE_HANG", "1"));
        CountDownLatch started = new CountDownLatch(1);
        evolve.on("lifecycle", e -> started.countDown());
        Run run = evolve.start(RunOptions.prompt("x"));
        assertTrue(started.await(10, TimeUnit.SECONDS));
        evolve.close();
        RunResult res = run.result().get(20, TimeUnit.SECONDS);
        assertEquals(RunState.CANCELLED, res.state());
        assertThrows(InvalidHandleException.class, evolve::status);
        evolve.close();
    }

    @Test
    void theDeliveryThreadIsNamedAfterTheRun() throws Exception {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s1-text"))) {
            List<String> names = new ArrayList<>();
            evolve.on("lifecycle", e -> names.add(Thread.currentThread().getName()));
            RunResult res = evolve.run(RunOptions.prompt("x")).get(30, TimeUnit.SECONDS);
            assertEquals("agentstream-" + res.runId(), names.get(0));
        }
    }
}
