package dev.agentstream;

import dev.agentstream.generated.ErrorKind;

/**
 * The core's error kind {@code null_argument} (code {@value #CODE}): a required argument was missing at the C ABI (this binding checks its own arguments first, so seeing it is a bug).
 * Its class extends AgentstreamException; like every error of this library it implements {@link AgentstreamFailure}.
 */
public final class NullArgumentException extends AgentstreamException {
    private static final long serialVersionUID = 1L;

    /** The stable code of this kind (the C ABI's status). */
    public static final int CODE = 1010;

    /**
     * An error with the core's message.
     *
     * @param message the message (the core's, with its advice)
     */
    public NullArgumentException(String message) {
        super(ErrorKind.NULL_ARGUMENT, message);
    }
}
