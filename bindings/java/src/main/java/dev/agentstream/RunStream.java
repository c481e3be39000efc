package dev.agentstream;

import dev.agentstream.generated.RunResult;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/**
 * A run read as an {@link Iterator} (or a {@link Stream}) of every delivery, in order: every
 * channel's items and, with hooks, the hook events. It ends after the run's terminal item and its
 * hooks. Backpressure is the run's own: the reader pulls from the run's buffer as fast as it
 * reads; a reader that leaves items unread for the run's stall limit (default 30 s) has the run
 * cancelled. Read by one thread at a time; {@link #cancel()} and {@link #close()} may come from
 * any. One dropped before its end without {@link #close()} is closed (its run cancelled, reason
 * {@code reader_left}) once it is unreachable — which it never is while its run's
 * {@code onEvent} handler, or a callback on its result, refers to it: use try-with-resources.
 *
 * <pre>{@code
 * try (RunStream stream = evolve.stream(RunOptions.builder().prompt("Fix the test").hooks(true).build())) {
 *     stream.stream().forEach(event -> System.out.println(Json.write(event)));
 *     RunResult result = stream.result();
 * }
 * }</pre>
 */
public final class RunStream implements Iterator<Event>, AutoCloseable {
    private final Run run;
    private final RunPuller puller;
    /** The {@link LeaveDropped} registration: cleaned (a no-op then) once the stream ended or closed. */
    private final java.lang.ref.Cleaner.Cleanable dropped;
    private final ArrayDeque<Event> ready = new ArrayDeque<>();
    private final List<Event> batch = new ArrayList<>();
    private boolean ended;
    /** hasNext() announced the first ready delivery and next() has not taken it: close() keeps it. */
    private boolean promised;
    private volatile boolean closed;

    RunStream(Run run) {
        this.run = run;
        this.puller = new RunPuller(run.handle);
        this.dropped = Native.CLEANER.register(this, new LeaveDropped(run, puller));
    }

    /**
     * What {@link #close()} does, for a stream that became unreachable before its end: the run is
     * cancelled (its reader left), then freed and its result completed. Refers to the run and the
     * puller, never to the stream.
     */
    private record LeaveDropped(Run left, RunPuller puller) implements Runnable {
        @Override
        public void run() {
            if (puller.isClosed()) {
                return; // read to its end, or closed
            }
            // The cleaner's one thread (shared) must not wait for the run to end: a thread of its own does.
            Thread.ofPlatform().daemon().name("agentstream-dropped-stream").start(() -> {
                left.streamLeft = true;
                puller.close();
                left.leave();
            });
        }
    }

    /**
     * The run (its id, its result future, cancellation).
     *
     * @return the run
     */
    public Run run() {
        return run;
    }

    /**
     * Whether another delivery comes; waits for it (or for the end).
     *
     * @return false after the last delivery
     */
    @Override
    public synchronized boolean hasNext() {
        run.streamReader = Thread.currentThread();
        if (run.inItsHandler()) {
            throw new BusyException("a RunStream was read from its own onEvent handler, in the middle of handing out a batch: "
                    + "read it after the handler returned");
        }
        while (ready.isEmpty() && !ended) {
            if (closed) {
                return false;
            }
            int kind;
            try {
                kind = puller.next(1000, batch);
            } catch (RuntimeException e) {
                ended = true;
                run.fail(e);
                puller.close();
                dropped.clean();
                throw e;
            }
            for (Event e : batch) {
                if (e instanceof Event.Hook h) {
                    run.callOnEvent(h);
                }
                if (closed) {
                    // Closed by onEvent (or another thread): nothing more is handed over, not
                    // even the rest of this batch or the hook whose handler closed it.
                    break;
                }
                ready.add(e);
            }
            batch.clear();
            if (kind == Native.NEXT_END && !closed) {
                ended = true;
                puller.close();
                dropped.clean();
                run.finish();
            }
        }
        promised = !ready.isEmpty();
        return promised;
    }

    /**
     * The next delivery.
     *
     * @return the delivery
     * @throws NoSuchElementException after the last one
     */
    @Override
    public synchronized Event next() {
        if (!hasNext()) {
            throw new NoSuchElementException("the run's stream has ended");
        }
        promised = false;
        return ready.poll();
    }

    /**
     * The deliveries as a sequential {@link Stream}; closing the stream closes this.
     *
     * @return the stream
     */
    public Stream<Event> stream() {
        Spliterator<Event> s = Spliterators.spliteratorUnknownSize(this, Spliterator.ORDERED | Spliterator.NONNULL);
        return StreamSupport.stream(s, false).onClose(this::close);
    }

    /**
     * Reads the rest of the run (discarding what was not read) and returns its result.
     *
     * @return the result
     */
    public RunResult result() {
        synchronized (this) {
            while (!ended && !closed) {
                ready.clear();
                hasNext();
            }
        }
        return run.result().join();
    }

    /** Cancels the run (see {@link Run#cancel()}); the stream then ends after the terminal item. */
    public void cancel() {
        run.cancel();
    }

    /**
     * Stops reading: an unfinished run is cancelled (reason: its reader left) and what is left of
     * it is discarded — except a delivery {@link #hasNext()} already announced, which {@link
     * #next()} still returns. The run's result stays available ({@link Run#result()}). Closing
     * again does nothing.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        run.streamLeft = true;
        closed = true;
        synchronized (this) {
            if (!ended) {
                ended = true;
                // A reader between hasNext() (true) and next() on another thread still gets that one.
                Event announced = promised ? ready.peekFirst() : null;
                ready.clear();
                if (announced != null) {
                    ready.add(announced);
                }
                puller.close();
                dropped.clean();
                run.leave();
            }
        }
    }
}
