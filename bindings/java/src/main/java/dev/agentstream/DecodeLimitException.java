package dev.agentstream;

import dev.agentstream.generated.ErrorKind;

/**
 * The core's error kind {@code decode_limit} (code {@value #CODE}): input went past a decode limit (a line longer than {@code maxLineBytes}).
 * Its class extends AgentstreamException; like every error of this library it implements {@link AgentstreamFailure}.
 */
public final class DecodeLimitException extends AgentstreamException {
    private static final long serialVersionUID = 1L;

    /** The stable code of this kind (the C ABI's status). */
    public static final int CODE = 1007;

    /**
     * An error with the core's message.
     *
     * @param message the message (the core's, with its advice)
     */
    public DecodeLimitException(String message) {
        super(ErrorKind.DECODE_LIMIT, message);
    }
}
