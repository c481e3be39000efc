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
    private final java.lang.ref.Cleaner.Cleanable cleanable;

    /**
     * A budget.
     *
     * @param totalBytes the bytes the runs in flight may hold unread, together
     * @param maxRuns how many runs may hold a permit at once
     * @throws InvalidArgumentException when either is negative
     */
    public Budget(long totalBytes, long maxRuns) {
        // The native sizes are unsigned: a negative long would arrive as a huge size (a budget
        // that bounds nothing).
        if (totalBytes < 0 || maxRuns < 0) {
            throw Errors.invalidArgument(
                    "totalBytes and maxRuns must not be negative, got " + totalBytes + " and " + maxRuns);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            Native.check(() -> (int) Native.BUDGET_NEW.invokeExact(totalBytes, maxRuns, out));
            handle = out.get(ADDRESS, 0);
        }
        // The sessions it is set on and the runs holding a permit hold the native budget
        // themselves: freeing this handle never takes it from them.
        cleanable = Native.CLEANER.register(this, new Native.Free(Native.BUDGET_FREE, handle));
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
        } finally {
            // Not freed by the Cleaner during the call (this may be the budget's last use).
            java.lang.ref.Reference.reachabilityFence(this);
        }
    }

    /** Frees the budget; runs holding a permit keep it until they end. Closing again does nothing. */
    @Override
    public void close() {
        closed = true;
        cleanable.clean();
    }
}
