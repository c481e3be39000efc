package dev.agentstream;

import static java.lang.foreign.ValueLayout.JAVA_BOOLEAN;

import dev.agentstream.generated.AgentEvent;
import dev.agentstream.generated.Channel;
import dev.agentstream.generated.Pressure;
import dev.agentstream.generated.RunResult;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * One started run (or command): its id, its result once it ended, and cancellation. Started by
 * {@link Evolve#start} (or {@link Evolve#run}, which returns its {@link #result()}); pause,
 * resume, interrupt and kill are the {@link Evolve}'s, which has one run at a time. Thread-safe.
 */
public final class Run {
    /** The handler id hook-handler failures are counted under (subscription ids are small). */
    static final long ON_EVENT_HANDLER = -2L;

    private static final Wire.Converter RUN_RESULT = Wire.converter(RunResult.class);

    private final String id;
    final MemorySegment handle;
    private final Future result = new Future(this);
    private final Consumer<? super AgentEvent> onEvent;
    /** Keeps the Evolve (and its native session) alive while the run goes on; null after. */
    private volatile Evolve owner;
    private volatile boolean freed;
    private final Object freeLock = new Object();
    /** The result once the run ended (kept apart from the future, which its caller may cancel). */
    private volatile RunResult finalResult;
    /** The thread calling this run's handlers, once it started. */
    private volatile Thread deliveryThread;
    /** The thread that last read the run's {@link RunStream} (the run ends only as it is read). */
    volatile Thread streamReader;
    /** The RunStream was closed (by any thread): the closer reads the rest, so waiting is fine. */
    volatile boolean streamLeft;

    Run(Evolve owner, MemorySegment handle, String id, Consumer<? super AgentEvent> onEvent) {
        this.owner = owner;
        this.handle = handle;
        this.id = id;
        this.onEvent = onEvent;
    }

    /**
     * The run's id ({@code run_…}), as in its events and result.
     *
     * @return the id
     */
    public String id() {
        return id;
    }

    /**
     * The run's result, completed once the run ended and its last handler call returned. A run
     * that failed or was cancelled is a normal completion: read {@code state()}. Cancelling this
     * future cancels the run (SIGTERM to its process group, then SIGKILL after the grace period)
     * and completes it with a {@link java.util.concurrent.CancellationException} at once; to cancel
     * and still read the result, call {@link #cancel()} instead. Completing it any other way
     * ({@code orTimeout}, {@code complete}, …) cancels the run too. {@code get} or {@code join}
     * from one of the run's own handlers would wait for itself: a {@link BusyException}; so would
     * the thread reading the run's {@link RunStream} before the stream ended (the run ends only as
     * it is read: read it to its end, or call {@link RunStream#result()}).
     *
     * @return the result
     */
    public CompletableFuture<RunResult> result() {
        return result;
    }

    /** Whether the run ended (its result is complete). @return true once ended */
    public boolean isDone() {
        return result.isDone();
    }

    /**
     * Cancels the run with the reason {@code "cancelled by the caller"} (see {@link
     * #cancel(String)}).
     */
    public void cancel() {
        cancel("cancelled by the caller");
    }

    /**
     * Cancels the run: SIGTERM to its process group, SIGKILL after its grace period; it ends
     * {@code run_interrupted} with this reason (the first reason given stands). After the end it
     * does nothing.
     *
     * @param reason why, for the result's {@code cancelReason()}
     */
    public void cancel(String reason) {
        synchronized (freeLock) {
            if (freed) {
                return;
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment r = Native.ctext(arena, reason);
                Native.check(() -> (int) Native.RUN_CANCEL.invokeExact(handle, r));
            }
        }
    }

    /**
     * The run's live backpressure statistics (after its end: its result's).
     *
     * @return the statistics
     */
    public Pressure pressure() {
        synchronized (freeLock) {
            if (!freed) {
                byte[] json = Native.ownedBytes((out, len) -> (int) Native.RUN_PRESSURE.invokeExact(handle, out, len));
                return Json.convert(Json.parse(json), Pressure.class);
            }
        }
        RunResult r = finalResult;
        return r != null ? r.pressure() : result.join().pressure();
    }

    // ---- delivery (package-private: Evolve and RunStream drive it) ----

    /**
     * Calls the handlers of the run's deliveries on this thread until the end, then completes the
     * result: the delivery thread of a run started with handlers.
     */
    void deliver(Evolve.Subscriptions subscriptions) {
        deliveryThread = Thread.currentThread();
        try (RunPuller puller = new RunPuller(handle)) {
            List<Event> batch = new ArrayList<>();
            while (true) {
                int kind = puller.next(1000, batch);
                for (Event e : batch) {
                    dispatch(e, subscriptions);
                }
                batch.clear();
                if (kind == Native.NEXT_END) {
                    break;
                }
            }
            finish();
        } catch (Throwable t) {
            fail(t);
        }
    }

    private void dispatch(Event e, Evolve.Subscriptions subscriptions) {
        if (e instanceof Event.Hook h) {
            callOnEvent(h);
            return;
        }
        Channel channel = switch (e) {
            case Event.Content c -> Channel.CONTENT;
            case Event.Lifecycle l -> Channel.LIFECYCLE;
            case Event.Text t -> t.channel();
            case Event.Hook h -> throw new AssertionError(h);
        };
        for (Subscription s : subscriptions.of(channel)) {
            // Removing a handler waits for the calls that entered before it (see Subscription).
            if (s.enter()) {
                try {
                    call(s.id(), channel.wire(), e.sequence(), () -> s.handler.accept(e));
                } finally {
                    s.exit();
                }
            }
        }
    }

    /** Whether this thread is calling one of the run's handlers (waiting for the run would wait for itself). */
    boolean inItsHandler() {
        return Thread.currentThread() == deliveryThread;
    }

    /** The hook handler (if any) for one hook delivery. */
    void callOnEvent(Event.Hook h) {
        if (onEvent != null) {
            // A stream's reader calls it: for the call, that thread is the one that must not wait.
            Thread streaming = deliveryThread == null ? Thread.currentThread() : null;
            if (streaming != null) {
                deliveryThread = streaming;
            }
            try {
                call(ON_EVENT_HANDLER, "on_event", h.sequence(), () -> onEvent.accept(h.hook()));
            } finally {
                if (streaming != null) {
                    deliveryThread = null;
                }
            }
        }
    }

    /**
     * Runs one handler call. Whatever it throws is counted on the run by the core, and reported
     * (with its stack) when it is that handler's first failure in this run.
     */
    void call(long handler, String channel, long sequence, Runnable body) {
        // Read first: a handler that closes its stream frees the run, which forgets its owner.
        Evolve o = owner;
        try {
            body.run();
        } catch (Throwable t) {
            boolean first = true;
            synchronized (freeLock) {
                // A handler that closed its stream (and so freed the run) and then threw: the run
                // can no longer count it, and it is reported all the same.
                if (!freed) {
                    try (Arena arena = Arena.ofConfined()) {
                        MemorySegment ch = Native.cstring(arena, channel);
                        MemorySegment msg = Native.ctext(arena, HandlerError.describe(t));
                        MemorySegment out = arena.allocate(JAVA_BOOLEAN);
                        Native.check(() -> (int) Native.RUN_HANDLER_FAILED.invokeExact(handle, handler, ch, sequence, msg, out));
                        first = Native.bool(out);
                    }
                }
            }
            if (first) {
                HandlerError failure = new HandlerError(id, channel, sequence, t);
                try {
                    if (o != null) {
                        o.report(failure);
                    } else {
                        Evolve.logHandlerError(failure);
                    }
                } catch (Throwable reportFailed) {
                    // A failing report must not stop the run.
                    try {
                        Evolve.logHandlerError(failure);
                    } catch (Throwable logFailed) {
                        // Not even logged (the throwable's own methods throw): it is counted.
                    }
                }
            }
        }
    }

    /** Waits for the result (the run's deliveries were read or discarded), frees the run, completes. */
    void finish() {
        RunResult r;
        try {
            byte[] json = Native.ownedBytes((out, len) -> (int) Native.RUN_WAIT.invokeExact(handle, -1L, out, len));
            r = (RunResult) RUN_RESULT.convert(Json.parse(json));
        } catch (RuntimeException e) {
            // Freed and completed all the same: a waiter gets the failure, not a future that never completes.
            free();
            result.failRun(e);
            throw e;
        }
        finalResult = r;
        free();
        result.completeRun(r);
    }

    /**
     * The reader leaves before the end: the run is cancelled (reason {@code reader_left}), what
     * is left of it discarded, and its result completed once it ended.
     */
    void leave() {
        synchronized (freeLock) {
            if (!freed) {
                Native.check(() -> (int) Native.RUN_LEAVE.invokeExact(handle));
            }
        }
        finish();
    }

    /** A bug while reading: the run is cancelled (its reader left) and the result fails. */
    void fail(Throwable t) {
        synchronized (freeLock) {
            if (!freed) {
                try {
                    Native.check(() -> (int) Native.RUN_LEAVE.invokeExact(handle));
                } catch (RuntimeException ignored) {
                    // Reported through the result below.
                }
            }
        }
        free();
        result.failRun(t);
    }

    private void free() {
        synchronized (freeLock) {
            if (!freed) {
                freed = true;
                owner = null;
                try {
                    Native.RUN_FREE.invokeExact(handle);
                } catch (Throwable t) {
                    throw new IllegalStateException(t);
                }
            }
        }
    }

    /**
     * The result future: cancelling it cancels the run, and so does completing it any other way
     * ({@code complete}, {@code completeAsync}, {@code completeExceptionally}, {@code orTimeout},
     * {@code obtrude…}): the
     * run must not go on unseen. Waiting for it ({@code get}, {@code join}) from the run's own
     * handler would wait for itself: a {@link BusyException}.
     */
    static final class Future extends CompletableFuture<RunResult> {
        /** Waiting for {@code future} of {@code run} from one of the run's handlers would wait for itself. */
        static void notFromItsHandler(CompletableFuture<?> future, Run run) {
            if (!future.isDone() && run.inItsHandler()) {
                throw new BusyException("run " + run.id
                        + " was waited for from one of its own handlers, which would wait for itself: wait from another thread");
            }
            if (!future.isDone() && Thread.currentThread() == run.streamReader && !run.streamLeft) {
                throw new BusyException("run " + run.id + " was waited for by the thread reading its RunStream, before the "
                        + "stream ended: the run ends only as it is read; read the stream to its end, or call RunStream.result()");
            }
        }

        private final Run run;

        Future(Run run) {
            this.run = run;
        }

        /**
         * Cancels the future first, then the run: the run may end within milliseconds of the
         * core's cancel, on its delivery thread, and must not complete the future before it is
         * marked cancelled.
         */
        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            boolean cancelled = super.cancel(mayInterruptIfRunning);
            if (cancelled) {
                stopRun("cancelled through its CompletableFuture");
            }
            return cancelled;
        }

        @Override
        public boolean complete(RunResult value) {
            return stopRunIf(super.complete(value), null);
        }

        @Override
        public boolean completeExceptionally(Throwable ex) {
            return stopRunIf(super.completeExceptionally(ex), ex);
        }

        /** As {@code complete}, from {@code executor} (the JDK's own completes without it). */
        @Override
        public CompletableFuture<RunResult> completeAsync(
                java.util.function.Supplier<? extends RunResult> supplier, java.util.concurrent.Executor executor) {
            java.util.Objects.requireNonNull(supplier, "supplier");
            java.util.Objects.requireNonNull(executor, "executor");
            executor.execute(() -> {
                if (isDone()) {
                    return;
                }
                try {
                    complete(supplier.get());
                } catch (Throwable t) {
                    completeExceptionally(t);
                }
            });
            return this;
        }

        @Override
        public CompletableFuture<RunResult> completeAsync(java.util.function.Supplier<? extends RunResult> supplier) {
            return completeAsync(supplier, defaultExecutor());
        }

        @Override
        public void obtrudeValue(RunResult value) {
            super.obtrudeValue(value);
            stopRunIf(true, null);
        }

        @Override
        public void obtrudeException(Throwable ex) {
            super.obtrudeException(ex);
            stopRunIf(true, ex);
        }

        /** The caller completed the future ({@code completed}, with {@code ex} if any): the run stops. */
        private boolean stopRunIf(boolean completed, Throwable ex) {
            if (completed) {
                stopRun("its CompletableFuture was completed by the caller"
                        + (ex == null ? "" : " (" + ex.getClass().getSimpleName() + ")"));
            }
            return completed;
        }

        @Override
        public RunResult get() throws InterruptedException, java.util.concurrent.ExecutionException {
            notFromItsHandler();
            return super.get();
        }

        @Override
        public RunResult get(long timeout, TimeUnit unit)
                throws InterruptedException, java.util.concurrent.ExecutionException, java.util.concurrent.TimeoutException {
            notFromItsHandler();
            return super.get(timeout, unit);
        }

        @Override
        public RunResult join() {
            notFromItsHandler();
            return super.join();
        }

        private void notFromItsHandler() {
            notFromItsHandler(this, run);
        }

        /** A future derived from this one ({@code thenApply}, …) is checked the same way. */
        @Override
        public <U> CompletableFuture<U> newIncompleteFuture() {
            return new Derived<>(run);
        }

        private void stopRun(String reason) {
            try {
                run.cancel(reason);
            } catch (RuntimeException ignored) {
                // The run ended meanwhile.
            }
        }

        void completeRun(RunResult r) {
            super.complete(r);
        }

        void failRun(Throwable t) {
            super.completeExceptionally(t);
        }
    }

    /**
     * A future derived from a run's result ({@code thenApply}, {@code thenCompose}, …, and what
     * derives from those): waiting for it ({@code get}, {@code join}) from the run's own handler
     * would wait for the run too, so it is a {@link BusyException} as well.
     */
    static final class Derived<U> extends CompletableFuture<U> {
        private final Run run;

        Derived(Run run) {
            this.run = run;
        }

        @Override
        public <V> CompletableFuture<V> newIncompleteFuture() {
            return new Derived<>(run);
        }

        @Override
        public U get() throws InterruptedException, java.util.concurrent.ExecutionException {
            Future.notFromItsHandler(this, run);
            return super.get();
        }

        @Override
        public U get(long timeout, TimeUnit unit)
                throws InterruptedException, java.util.concurrent.ExecutionException, java.util.concurrent.TimeoutException {
            Future.notFromItsHandler(this, run);
            return super.get(timeout, unit);
        }

        @Override
        public U join() {
            Future.notFromItsHandler(this, run);
            return super.join();
        }
    }
}
