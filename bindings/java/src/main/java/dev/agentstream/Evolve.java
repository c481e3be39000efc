package dev.agentstream;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BOOLEAN;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.agentstream.generated.Channel;
import dev.agentstream.generated.RunResult;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * One configured agent, the handlers registered with {@link #on}, and the runs started from it,
 * one at a time (the seed's {@code Evolve}). Successive runs continue the harness conversation
 * (see {@link #session()}). Thread-safe; close it when done (it kills an active run).
 *
 * <pre>{@code
 * try (Evolve evolve = new Evolve(AgentConfig.of("claude"))) {
 *     evolve.on("content", event -> System.out.println(event.content().update()));
 *     RunResult result = evolve.run(RunOptions.prompt("List the files")).join();
 *     RunResult next = evolve.run(RunOptions.prompt("Now count them")).join(); // same conversation
 * }
 * }</pre>
 *
 * <p>Every method is the core's, through the C ABI: the same validation, messages and behaviour as
 * every other language. Errors are this library's exceptions (see {@link AgentstreamFailure}).
 */
public final class Evolve implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("dev.agentstream");

    private final AgentConfig config;
    private final MemorySegment session;
    private final Subscriptions subscriptions = new Subscriptions();
    private volatile boolean closed;
    private volatile Consumer<? super HandlerError> handlerErrorReport = Evolve::logHandlerError;
    private final java.lang.ref.Cleaner.Cleanable cleanable;

    /**
     * An {@code Evolve} for an agent.
     *
     * @param config the agent
     * @throws InvalidArgumentException for a bad config (an unknown agent: the message lists the
     *     seven; an empty value: the message names the field)
     */
    public Evolve(AgentConfig config) {
        this.config = Objects.requireNonNull(config, "config");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment json = Native.cstring(arena, config.toJson());
            MemorySegment out = arena.allocate(ADDRESS);
            Native.check(() -> (int) Native.SESSION_NEW.invokeExact(json, Native.NAMING_CAMEL, out));
            session = out.get(ADDRESS, 0);
        }
        // A run in progress keeps its Evolve reachable (Run.owner), so this never ends a run early.
        cleanable = Native.CLEANER.register(this, new Native.Free(Native.SESSION_FREE, session));
    }

    /**
     * The configuration it was created with.
     *
     * @return the config
     */
    public AgentConfig config() {
        return config;
    }

    /**
     * The canonical agent name ({@code claude}, …).
     *
     * @return the name
     */
    public String agent() {
        return whileOpen(() -> {
            try {
                return Native.staticString((MemorySegment) Native.SESSION_AGENT.invokeExact(session));
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        });
    }

    private void live() {
        if (closed) {
            throw Errors.closed("this Evolve");
        }
    }

    /**
     * {@code body}'s result, this {@code Evolve} checked open first and kept reachable until
     * {@code body} returns: the native handle is read from this object, and without the fence
     * the JIT may take the object for unreachable right after that read ({@code new
     * Evolve(config).status()}) and let its Cleaner free the session mid-call.
     */
    private <T> T whileOpen(Supplier<T> body) {
        live();
        try {
            return body.get();
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** {@link #whileOpen} for a body that returns nothing. */
    private void whileOpenDo(Runnable body) {
        whileOpen(() -> {
            body.run();
            return null;
        });
    }

    // ---- handlers ----

    /**
     * Registers a handler for a channel (the seed's {@code on(name, handler)}): {@code "content"}
     * (decoded events: {@link Event#content()}), {@code "lifecycle"} ({@link Event#lifecycle()}),
     * {@code "stdout"} or {@code "stderr"} (raw text: {@link Event#text()}).
     *
     * <p>During a run the handlers are called on the run's delivery thread (one per run, not the
     * caller's), in sequence order, one at a time; the handlers of a channel in registration
     * order. A handler registered during a run gets the rest of it (unless the run started with
     * no handler and no {@code onEvent}: such a run is only awaited, and the next run calls it).
     * A handler that throws does not stop the run or the other handlers: every failure is counted ({@code
     * RunResult.handlerErrors()}) and the first of each handler in a run is reported with its
     * stack (see {@link #onHandlerError}). A {@link RunStream} does not call these handlers.
     *
     * @param channel {@code "content"}, {@code "lifecycle"}, {@code "stdout"} or {@code "stderr"}
     * @param handler the handler
     * @return the registration ({@link Subscription#close()} removes this handler)
     * @throws InvalidArgumentException (an {@link IllegalArgumentException}) for any other name;
     *     the message lists the four
     */
    public Subscription on(String channel, Consumer<? super Event> handler) {
        Objects.requireNonNull(channel, "channel");
        Objects.requireNonNull(handler, "handler");
        return whileOpen(() -> {
            synchronized (subscriptions) {
                long id;
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment name = Native.cstring(arena, channel);
                    MemorySegment out = arena.allocate(JAVA_LONG);
                    Native.check(() -> (int) Native.SESSION_SUBSCRIBE.invokeExact(session, name, out));
                    id = out.get(JAVA_LONG, 0);
                }
                Subscription s = new Subscription(this, id, Channel.fromWire(channel), handler);
                subscriptions.add(s);
                return s;
            }
        });
    }

    /**
     * Removes every handler of a channel (the seed's {@code off(name)}). No call of a removed
     * handler starts after this returns; a call of one in progress on another thread finishes
     * first (as for {@link Subscription#close()}).
     *
     * @param channel {@code "content"}, {@code "lifecycle"}, {@code "stdout"} or {@code "stderr"}
     * @throws InvalidArgumentException for any other name, like {@link #on}
     */
    public void off(String channel) {
        Objects.requireNonNull(channel, "channel");
        whileOpenDo(() -> {
            List<Subscription> removed;
            synchronized (subscriptions) {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment name = Native.cstring(arena, channel);
                    Native.check(() -> (int) Native.SESSION_OFF.invokeExact(session, name, MemorySegment.NULL));
                }
                removed = subscriptions.removeChannel(Channel.fromWire(channel));
            }
            removed.forEach(Subscription::awaitCallsElsewhere);
        });
    }

    /** One subscription's removal ({@link Subscription#close()}). */
    void remove(Subscription s) {
        synchronized (subscriptions) {
            if (!s.removed) {
                subscriptions.remove(s);
                if (!closed) {
                    try (Arena arena = Arena.ofConfined()) {
                        MemorySegment out = arena.allocate(JAVA_BOOLEAN);
                        Native.check(() -> (int) Native.SESSION_OFF_ID.invokeExact(session, s.id(), out));
                    }
                }
            }
        }
        // Outside the lock: a handler being waited for may add or remove handlers itself.
        s.awaitCallsElsewhere();
    }

    /**
     * Sets where handler failures are reported: called with the first failure of each handler in
     * a run (later ones are only counted, in {@code RunResult.handlerErrors()}), on the run's
     * delivery thread. The default logs it through {@link System.Logger} {@code dev.agentstream}
     * at level ERROR, with the stack.
     *
     * @param report the reporter
     */
    public void onHandlerError(Consumer<? super HandlerError> report) {
        this.handlerErrorReport = Objects.requireNonNull(report, "report");
    }

    void report(HandlerError failure) {
        handlerErrorReport.accept(failure);
    }

    static void logHandlerError(HandlerError failure) {
        LOG.log(System.Logger.Level.ERROR, failure.message(), failure.error());
    }

    // ---- runs ----

    /**
     * Runs to the end and completes with the run's result (the seed's {@code run()}): {@link
     * #start}, then {@link Run#result()}. Cancelling the future cancels the run.
     *
     * @param options the run
     * @return the result, completed after the run's last handler call
     * @throws InvalidArgumentException for bad options (the message names the field)
     * @throws HarnessNotFoundException when the harness executable is not found
     * @throws AlreadyRunningException while another run of this {@code Evolve} goes on
     */
    public CompletableFuture<RunResult> run(RunOptions options) {
        return start(options).result();
    }

    /**
     * Starts a run and returns at once (the seed's {@code background=True} returns this way too):
     * a harness run of the options' prompt, or a command run. The run continues this {@code
     * Evolve}'s harness conversation when there is one (its hooks then begin with {@code
     * run.resumed}). Its deliveries go to the handlers registered with {@link #on} and the
     * options' {@code onEvent}, on a delivery thread of its own; a run with neither is only
     * awaited.
     *
     * @param options the run
     * @return the run
     * @throws InvalidArgumentException for bad options (the message names the field)
     * @throws HarnessNotFoundException when the harness executable is not found
     * @throws AlreadyRunningException while another run of this {@code Evolve} goes on
     */
    public Run start(RunOptions options) {
        Run run = startRun(options, null);
        try {
            Thread.ofPlatform().daemon().name("agentstream-" + run.id()).start(() -> run.deliver(subscriptions));
        } catch (RuntimeException | Error e) {
            // No thread to read it (OutOfMemoryError: unable to create native thread, …).
            try {
                run.cancel("no delivery thread could be started: " + e);
            } finally {
                run.fail(e);
            }
            throw e;
        }
        return run;
    }

    /**
     * Starts a run read as a stream of every delivery (every channel's items, and hook events
     * with {@link RunOptions.Builder#hooks} or {@code onEvent}): the core's iterated run. The
     * handlers registered with {@link #on} are not called; the options' {@code onEvent} is, before
     * each hook is handed over. Close the stream (try-with-resources) when done: leaving early
     * cancels the run.
     *
     * @param options the run
     * @return the stream, read on the caller's thread
     * @throws InvalidArgumentException for bad options (the message names the field)
     * @throws HarnessNotFoundException when the harness executable is not found
     * @throws AlreadyRunningException while another run of this {@code Evolve} goes on
     */
    public RunStream stream(RunOptions options) {
        return new RunStream(startRun(options, "iterate"));
    }

    private Run startRun(RunOptions options, String read) {
        Objects.requireNonNull(options, "options");
        return whileOpen(() -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment request = Native.cstring(arena, options.requestJson(read));
                MemorySegment out = arena.allocate(ADDRESS);
                Native.check(() -> (int) Native.SESSION_START.invokeExact(
                        session, request, MemorySegment.NULL, MemorySegment.NULL, MemorySegment.NULL, out));
                MemorySegment handle = out.get(ADDRESS, 0);
                try {
                    String id = Native.ownedString((o, len) -> (int) Native.RUN_ID.invokeExact(handle, o, len));
                    return new Run(this, handle, id, options.onEvent());
                } catch (RuntimeException | Error e) {
                    // Nobody could hold this run: it is cancelled and freed, not left to block the
                    // Evolve's next start until the stall limit.
                    abandon(handle);
                    throw e;
                }
            }
        });
    }

    /** A started run that cannot be handed out: cancelled, then freed. */
    private static void abandon(MemorySegment handle) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment reason = Native.cstring(arena, "the binding could not set the run up");
            int ignored = (int) Native.RUN_CANCEL.invokeExact(handle, reason);
            Native.RUN_FREE.invokeExact(handle);
        } catch (Throwable t) {
            // Reported through the exception the caller gets.
        }
    }

    // ---- status, session, controls ----

    /**
     * The state of this {@code Evolve} (the seed's {@code status()}).
     *
     * @return the status
     */
    public Status status() {
        return whileOpen(() -> {
            byte[] json = Native.ownedBytes((out, len) -> (int) Native.SESSION_STATUS.invokeExact(session, out, len));
            return Json.convert(Json.parse(json), Status.class);
        });
    }

    /**
     * The harness session (conversation) the next run continues: the session id the last run
     * reported, or the one given to {@link #setSession}; empty when the next run starts a new one.
     *
     * @return the session id
     */
    public Optional<String> session() {
        return whileOpen(() -> Optional.ofNullable(
                Native.ownedString((out, len) -> (int) Native.SESSION_SESSION_ID.invokeExact(session, out, len))));
    }

    /**
     * Chooses the harness session the next run continues: a session id a run reported (of this
     * {@code Evolve} or another), or null to start a new conversation. {@link
     * RunOptions.Builder#resume} chooses one for one run.
     *
     * @param sessionId the session id, or null
     * @throws InvalidArgumentException for an id the harness could not take (e.g. starting with
     *     {@code -})
     */
    public void setSession(String sessionId) {
        whileOpenDo(() -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment id = Native.cstring(arena, sessionId);
                Native.check(() -> (int) Native.SESSION_SET_SESSION_ID.invokeExact(session, id));
            }
        });
    }

    /**
     * Lets this {@code Evolve}'s runs share a budget with every other run using it (null: none).
     *
     * @param budget the budget, or null
     */
    public void setBudget(Budget budget) {
        MemorySegment b = budget == null ? MemorySegment.NULL : budget.handle;
        try {
            whileOpenDo(() -> Native.check(() -> (int) Native.SESSION_SET_BUDGET.invokeExact(session, b)));
        } finally {
            // `setBudget(new Budget(…))`: the Budget must outlive the call, or its Cleaner frees it.
            Reference.reachabilityFence(budget);
        }
    }

    /**
     * Pauses the active run's process group (SIGSTOP; lifecycle {@code sandbox_pause}).
     *
     * @throws NotRunningException when nothing runs
     */
    public void pause() {
        whileOpenDo(() -> Native.check(() -> (int) Native.SESSION_PAUSE.invokeExact(session)));
    }

    /**
     * Continues a paused run (SIGCONT; lifecycle {@code sandbox_resume}).
     *
     * @throws NotRunningException when nothing runs
     */
    public void resume() {
        whileOpenDo(() -> Native.check(() -> (int) Native.SESSION_RESUME.invokeExact(session)));
    }

    /**
     * Stops the active run: SIGTERM to its process group, SIGKILL after its grace period; it ends
     * {@code run_interrupted}.
     *
     * @return whether anything was interrupted (false when nothing runs)
     */
    public boolean interrupt() {
        return whileOpen(() -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment reason = Native.cstring(arena, "interrupted");
                MemorySegment out = arena.allocate(JAVA_BOOLEAN);
                Native.check(() -> (int) Native.SESSION_INTERRUPT.invokeExact(session, reason, out));
                return Native.bool(out);
            }
        });
    }

    /**
     * Ends the active run at once (SIGKILL; lifecycle {@code sandbox_killed}, then {@code
     * run_interrupted}).
     *
     * @return whether anything was killed (false when nothing runs)
     */
    public boolean kill() {
        return whileOpen(() -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment out = arena.allocate(JAVA_BOOLEAN);
                Native.check(() -> (int) Native.SESSION_KILL.invokeExact(session, out));
                return Native.bool(out);
            }
        });
    }

    /**
     * Frees this {@code Evolve}: an active run is killed (its {@link Run} still reports its
     * result) and no call of a handler registered with {@link #on} starts after this returns
     * (one in progress on another thread finishes first; the run's own {@code onEvent}, a run
     * option, still gets its last hook events). Closing again does nothing; any
     * other call after it throws {@link InvalidHandleException}.
     */
    @Override
    public void close() {
        List<Subscription> removed;
        synchronized (subscriptions) {
            if (closed) {
                return;
            }
            closed = true;
            removed = subscriptions.removeAll();
        }
        cleanable.clean();
        removed.forEach(Subscription::awaitCallsElsewhere);
    }

    /** The handlers by channel, in registration order (the core's subscription order). */
    static final class Subscriptions {
        private final Map<Channel, List<Subscription>> byChannel = new EnumMap<>(Channel.class);

        Subscriptions() {
            for (Channel c : Channel.values()) {
                byChannel.put(c, new CopyOnWriteArrayList<>());
            }
        }

        List<Subscription> of(Channel c) {
            return byChannel.get(c);
        }

        void add(Subscription s) {
            byChannel.get(s.channel()).add(s);
        }

        void remove(Subscription s) {
            s.removed = true;
            byChannel.get(s.channel()).remove(s);
        }

        List<Subscription> removeChannel(Channel c) {
            List<Subscription> l = byChannel.get(c);
            List<Subscription> removed = new ArrayList<>(l);
            for (Subscription s : removed) {
                s.removed = true;
            }
            l.clear();
            return removed;
        }

        List<Subscription> removeAll() {
            List<Subscription> removed = new ArrayList<>();
            for (Channel c : Channel.values()) {
                removed.addAll(removeChannel(c));
            }
            return removed;
        }
    }
}
