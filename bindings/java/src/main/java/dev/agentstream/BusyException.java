package dev.agentstream;

import dev.agentstream.generated.ErrorKind;

/**
 * The core's error kind {@code busy} (code {@value #CODE}): the object is in use by a call that has not returned (called from inside one of its own callbacks, or from two threads at once where one at a time is required).
 * Its class extends IllegalStateException (the Java exception for this kind of misuse); like every error of this library it implements {@link AgentstreamFailure}.
 */
public final class BusyException extends IllegalStateException implements AgentstreamFailure {
    private static final long serialVersionUID = 1L;

    /** The stable code of this kind (the C ABI's status). */
    public static final int CODE = 1012;

    /**
     * An error with the core's message.
     *
     * @param message the message (the core's, with its advice)
     */
    public BusyException(String message) {
        super(message);
    }

    @Override
    public ErrorKind kind() {
        return ErrorKind.BUSY;
    }
}
