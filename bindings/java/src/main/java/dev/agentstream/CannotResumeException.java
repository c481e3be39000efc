package dev.agentstream;

import dev.agentstream.generated.ErrorKind;

/**
 * The core's error kind {@code cannot_resume} (code {@value #CODE}): the harness cannot continue a previous session, or the session to continue is unknown.
 * Its class extends AgentstreamException; like every error of this library it implements {@link AgentstreamFailure}.
 */
public final class CannotResumeException extends AgentstreamException {
    private static final long serialVersionUID = 1L;

    /** The stable code of this kind (the C ABI's status). */
    public static final int CODE = 1016;

    /**
     * An error with the core's message.
     *
     * @param message the message (the core's, with its advice)
     */
    public CannotResumeException(String message) {
        super(ErrorKind.CANNOT_RESUME, message);
    }
}
