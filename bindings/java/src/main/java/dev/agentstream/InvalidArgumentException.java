package dev.agentstream;

import dev.agentstream.generated.ErrorKind;

/**
 * The core's error kind {@code invalid_argument} (code {@value #CODE}): an argument is not valid: an unknown agent or channel name (the message lists the valid ones), a bad option (the message names the field as Java spells it, e.g. {@code timeoutMs}).
 * Its class extends IllegalArgumentException (the Java exception for this kind of misuse); like every error of this library it implements {@link AgentstreamFailure}.
 */
public final class InvalidArgumentException extends IllegalArgumentException implements AgentstreamFailure {
    private static final long serialVersionUID = 1L;

    /** The stable code of this kind (the C ABI's status). */
    public static final int CODE = 1004;

    /**
     * An error with the core's message.
     *
     * @param message the message (the core's, with its advice)
     */
    public InvalidArgumentException(String message) {
        super(message);
    }

    @Override
    public ErrorKind kind() {
        return ErrorKind.INVALID_ARGUMENT;
    }
}
