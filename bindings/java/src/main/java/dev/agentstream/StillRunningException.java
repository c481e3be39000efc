package dev.agentstream;

import dev.agentstream.generated.ErrorKind;

/**
 * The core's error kind {@code still_running} (code {@value #CODE}): the run has not ended yet (its result exists once its terminal event was delivered).
 * Its class extends IllegalStateException (the Java exception for this kind of misuse); like every error of this library it implements {@link AgentstreamFailure}.
 */
public final class StillRunningException extends IllegalStateException implements AgentstreamFailure {
    private static final long serialVersionUID = 1L;

    /** The stable code of this kind (the C ABI's status). */
    public static final int CODE = 1014;

    /**
     * An error with the core's message.
     *
     * @param message the message (the core's, with its advice)
     */
    public StillRunningException(String message) {
        super(message);
    }

    @Override
    public ErrorKind kind() {
        return ErrorKind.STILL_RUNNING;
    }
}
