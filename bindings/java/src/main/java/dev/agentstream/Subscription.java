package dev.agentstream;

import dev.agentstream.generated.Channel;
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
     * Removes this handler: no call of it starts after this returns, and a call in progress on a
     * run's delivery thread finishes first (called from inside a handler, it returns at once). Do
     * not call it while holding something that handler waits for. Closing it again does nothing.
     */
    @Override
    public void close() {
        owner.remove(this);
    }
}
