package dev.agentstream;

import dev.agentstream.generated.ErrorKind;

/**
 * The core's error kind {@code cancelled} (code {@value #CODE}): the run was cancelled.
 * Its class extends AgentstreamException; like every error of this library it implements {@link AgentstreamFailure}.
 */
public final class CancelledException extends AgentstreamException {
    private static final long serialVersionUID = 1L;

    /** The stable code of this kind (the C ABI's status). */
    public static final int CODE = 1005;

    /**
     * An error with the core's message.
     *
     * @param message the message (the core's, with its advice)
     */
    public CancelledException(String message) {
        super(ErrorKind.CANCELLED, message);
    }
}
