package dev.agentstream;

/**
 * A handler's failure on one delivery: what {@link Evolve#onHandlerError} receives for the first
 * failure of each handler in a run (later failures of that handler are only counted, in {@code
 * RunResult.handlerErrors()}).
 *
 * @param runId the run
 * @param channel the handler's channel ({@code content}, {@code lifecycle}, {@code stdout}, {@code
 *     stderr}), or {@code on_event} for the hook handler
 * @param sequence the sequence of the delivery it failed on
 * @param error what the handler threw (with its stack)
 */
public record HandlerError(String runId, String channel, long sequence, Throwable error) {
    /**
     * A one-line description.
     *
     * @return the description
     */
    public String message() {
        return "agentstream: a " + channel + " handler threw on run " + runId + ", sequence " + sequence + ": "
                + describe(error);
    }

    /**
     * What {@code t.toString()} says, or its class name when that throws (a {@code getMessage}
     * that fails): reporting a handler's failure must never be what stops the run.
     *
     * @param t what a handler threw
     * @return a one-line description
     */
    static String describe(Throwable t) {
        try {
            return String.valueOf(t);
        } catch (Throwable unreadable) {
            return t.getClass().getName() + " (its message could not be read: " + unreadable.getClass().getName() + ")";
        }
    }
}
