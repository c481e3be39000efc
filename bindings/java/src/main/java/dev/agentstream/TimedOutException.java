package dev.agentstream;

import dev.agentstream.generated.ErrorKind;

/**
 * The core's error kind {@code timeout} (code {@value #CODE}): the run went past its time limit.
 * Its class extends AgentstreamException; like every error of this library it implements {@link AgentstreamFailure}.
 */
public final class TimedOutException extends AgentstreamException {
    private static final long serialVersionUID = 1L;

    /** The stable code of this kind (the C ABI's status). */
    public static final int CODE = 1006;

    /**
     * An error with the core's message.
     *
     * @param message the message (the core's, with its advice)
     */
    public TimedOutException(String message) {
        super(ErrorKind.TIMEOUT, message);
    }
}
