package dev.agentstream;

import dev.agentstream.generated.ErrorKind;

/**
 * The core's error kind {@code already_running} (code {@value #CODE}): a run is already going on in this {@link Evolve} (one run at a time).
 * Its class extends IllegalStateException (the Java exception for this kind of misuse); like every error of this library it implements {@link AgentstreamFailure}.
 */
public final class AlreadyRunningException extends IllegalStateException implements AgentstreamFailure {
    private static final long serialVersionUID = 1L;

    /** The stable code of this kind (the C ABI's status). */
    public static final int CODE = 1002;

    /**
     * An error with the core's message.
     *
     * @param message the message (the core's, with its advice)
     */
    public AlreadyRunningException(String message) {
        super(message);
    }

    @Override
    public ErrorKind kind() {
        return ErrorKind.ALREADY_RUNNING;
    }
}
