package dev.agentstream;

import dev.agentstream.generated.ErrorKind;

/**
 * The core's error kind {@code unsupported} (code {@value #CODE}): not available on this platform (running a harness needs Linux or another Unix).
 * Its class extends UnsupportedOperationException (the Java exception for this kind of misuse); like every error of this library it implements {@link AgentstreamFailure}.
 */
public final class UnsupportedPlatformException extends UnsupportedOperationException implements AgentstreamFailure {
    private static final long serialVersionUID = 1L;

    /** The stable code of this kind (the C ABI's status). */
    public static final int CODE = 1017;

    /**
     * An error with the core's message.
     *
     * @param message the message (the core's, with its advice)
     */
    public UnsupportedPlatformException(String message) {
        super(message);
    }

    @Override
    public ErrorKind kind() {
        return ErrorKind.UNSUPPORTED;
    }
}
