package dev.agentstream;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A byte allowance shared by at most {@code maxRuns} concurrent runs, of any {@link Evolve} it is
 * set on ({@link Evolve#setBudget}): each run takes one permit for its life, and its byte budget
 * is {@code totalBytes / maxRuns}, so the runs in flight never hold more than {@code totalBytes}
 * unread. Starting a run when every permit is taken is an {@link InvalidArgumentException}.
 * Thread-safe.
 */
public final class Budget implements AutoCloseable {
    final MemorySegment handle;
    private volatile boolean closed;

    /**
     * A budget.
     *
     * @param totalBytes the bytes the runs in flight may hold unread, together
     * @param maxRuns how many runs may hold a permit at once
     */
    public Budget(long totalBytes, long maxRuns) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            Native.check(() -> (int) Native.BUDGET_NEW.invokeExact(totalBytes, maxRuns, out));
            handle = out.get(ADDRESS, 0);
        }
    }

    /**
     * How many runs hold a permit now.
     *
     * @return the count
     */
    public long active() {
        if (closed) {
            throw Errors.closed("this Budget");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            Native.check(() -> (int) Native.BUDGET_ACTIVE.invokeExact(handle, out));
            return out.get(JAVA_LONG, 0);
        }
    }

    /** Frees the budget; runs holding a permit keep it until they end. Closing again does nothing. */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            try {
                Native.BUDGET_FREE.invokeExact(handle);
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }
    }
}
