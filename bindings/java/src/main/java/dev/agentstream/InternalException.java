package dev.agentstream;

import dev.agentstream.generated.ErrorKind;

/**
 * The core's error kind {@code internal} (code {@value #CODE}): a bug in agentstream (please report it with the message).
 * Its class extends AgentstreamException; like every error of this library it implements {@link AgentstreamFailure}.
 */
public final class InternalException extends AgentstreamException {
    private static final long serialVersionUID = 1L;

    /** The stable code of this kind (the C ABI's status). */
    public static final int CODE = 1008;

    /**
     * An error with the core's message.
     *
     * @param message the message (the core's, with its advice)
     */
    public InternalException(String message) {
        super(ErrorKind.INTERNAL, message);
    }
}
