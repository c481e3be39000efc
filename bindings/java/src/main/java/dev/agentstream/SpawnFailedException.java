package dev.agentstream;

import dev.agentstream.generated.ErrorKind;

/**
 * The core's error kind {@code spawn_failed} (code {@value #CODE}): the harness was found but could not be started.
 * Its class extends AgentstreamException; like every error of this library it implements {@link AgentstreamFailure}.
 */
public final class SpawnFailedException extends AgentstreamException {
    private static final long serialVersionUID = 1L;

    /** The stable code of this kind (the C ABI's status). */
    public static final int CODE = 1003;

    /**
     * An error with the core's message.
     *
     * @param message the message (the core's, with its advice)
     */
    public SpawnFailedException(String message) {
        super(ErrorKind.SPAWN_FAILED, message);
    }
}
