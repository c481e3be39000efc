package dev.agentstream;

import dev.agentstream.generated.ErrorKind;

/**
 * The core's error kind {@code not_running} (code {@value #CODE}): nothing is running (pause or resume without an active run).
 * Its class extends IllegalStateException (the Java exception for this kind of misuse); like every error of this library it implements {@link AgentstreamFailure}.
 */
public final class NotRunningException extends IllegalStateException implements AgentstreamFailure {
    private static final long serialVersionUID = 1L;

    /** The stable code of this kind (the C ABI's status). */
    public static final int CODE = 1009;

    /**
     * An error with the core's message.
     *
     * @param message the message (the core's, with its advice)
     */
    public NotRunningException(String message) {
        super(message);
    }

    @Override
    public ErrorKind kind() {
        return ErrorKind.NOT_RUNNING;
    }
}
