package dev.agentstream;

import dev.agentstream.generated.ErrorKind;

/**
 * The core's error kind {@code buffer_too_small} (code {@value #CODE}): a buffer was too small for a text (not reachable through this binding).
 * Its class extends AgentstreamException; like every error of this library it implements {@link AgentstreamFailure}.
 */
public final class BufferTooSmallException extends AgentstreamException {
    private static final long serialVersionUID = 1L;

    /** The stable code of this kind (the C ABI's status). */
    public static final int CODE = 1013;

    /**
     * An error with the core's message.
     *
     * @param message the message (the core's, with its advice)
     */
    public BufferTooSmallException(String message) {
        super(ErrorKind.BUFFER_TOO_SMALL, message);
    }
}
