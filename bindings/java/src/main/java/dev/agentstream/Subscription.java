package dev.agentstream;

import dev.agentstream.generated.Channel;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * One handler registered with {@link Evolve#on}. {@link #close()} removes this handler only
 * ({@link Evolve#off} removes every handler of a channel).
 */
public final class Subscription implements AutoCloseable {
    private final Evolve owner;
    private final long id;
    private final Channel channel;
    final Consumer<? super Event> handler;
    volatile boolean removed;
    /**
     * The threads calling the handler now, with how many calls deep (two runs' delivery threads
     * may both be): removing it waits for those of other threads.
     */
    private final Map<Thread, Integer> calling = new ConcurrentHashMap<>();

    Subscription(Evolve owner, long id, Channel channel, Consumer<? super Event> handler) {
        this.owner = owner;
        this.id = id;
        this.channel = channel;
        this.handler = handler;
    }

    /**
     * The core's subscription id (handlers are called in the order of these ids).
     *
     * @return the id
     */
    public long id() {
        return id;
    }

    /**
     * The channel it listens to.
     *
     * @return the channel
     */
    public Channel channel() {
        return channel;
    }

    /**
     * Whether it was removed (by {@link #close()}, {@link Evolve#off} or closing the {@link
     * Evolve}).
     *
     * @return true once removed
     */
    public boolean isRemoved() {
        return removed;
    }

    /**
     * Removes this handler: no call of it starts after this returns, and a call of it in progress
     * on another thread (a run's delivery thread) finishes first — so do not call it from a thread
     * the handler waits on. From inside a handler it does not wait (a call of it in progress
     * elsewhere may finish after). Closing it again does nothing.
     */
    @Override
    public void close() {
        owner.remove(this);
    }

    /**
     * A call starts on this thread, unless the handler was removed: then false, and no call. (The
     * thread is registered before {@code removed} is read, and a removal sets it before it reads
     * the registrations: either the call is skipped or the removal waits for it.)
     */
    boolean enter() {
        calling.merge(Thread.currentThread(), 1, Integer::sum);
        if (removed) {
            leave();
            return false;
        }
        HANDLER_DEPTH.get()[0]++;
        return true;
    }

    /** The call that {@link #enter()} started on this thread returned. */
    void exit() {
        HANDLER_DEPTH.get()[0]--;
        leave();
    }

    private void leave() {
        calling.computeIfPresent(Thread.currentThread(), (t, depth) -> depth == 1 ? null : depth - 1);
        if (removed) {
            synchronized (this) {
                notifyAll();
            }
        }
    }

    /**
     * After {@code removed} was set: waits until no other thread is in a call of the handler —
     * unless this thread is itself in a handler call (two handlers removing each other, on two
     * runs' threads, would wait for each other for ever), or is interrupted.
     */
    void awaitCallsElsewhere() {
        if (HANDLER_DEPTH.get()[0] > 0) {
            return;
        }
        // (Not in a handler call itself, this thread is not among the callers.)
        synchronized (this) {
            while (!calling.isEmpty()) {
                try {
                    wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt(); // stop waiting: the caller asked
                    return;
                }
            }
        }
    }

    /** How many handler calls this thread is inside (of any subscription). */
    private static final ThreadLocal<int[]> HANDLER_DEPTH = ThreadLocal.withInitial(() -> new int[1]);
}
