package dev.agentstream;

import dev.agentstream.generated.ErrorKind;

/**
 * The core's error kind {@code panic} (code {@value #CODE}): a Rust panic was caught at the API edge (a bug in agentstream; discard the object involved).
 * Its class extends AgentstreamException; like every error of this library it implements {@link AgentstreamFailure}.
 */
public final class PanicException extends AgentstreamException {
    private static final long serialVersionUID = 1L;

    /** The stable code of this kind (the C ABI's status). */
    public static final int CODE = 1015;

    /**
     * An error with the core's message.
     *
     * @param message the message (the core's, with its advice)
     */
    public PanicException(String message) {
        super(ErrorKind.PANIC, message);
    }
}
