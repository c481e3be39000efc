package dev.agentstream;

import dev.agentstream.generated.ErrorKind;

/**
 * The core's error kind {@code harness_not_found} (code {@value #CODE}): the harness executable was not found (the message names the path or command tried).
 * Its class extends AgentstreamException; like every error of this library it implements {@link AgentstreamFailure}.
 */
public final class HarnessNotFoundException extends AgentstreamException {
    private static final long serialVersionUID = 1L;

    /** The stable code of this kind (the C ABI's status). */
    public static final int CODE = 1001;

    /**
     * An error with the core's message.
     *
     * @param message the message (the core's, with its advice)
     */
    public HarnessNotFoundException(String message) {
        super(ErrorKind.HARNESS_NOT_FOUND, message);
    }
}
