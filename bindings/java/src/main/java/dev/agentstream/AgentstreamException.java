package dev.agentstream;

import dev.agentstream.generated.ErrorKind;

/**
 * The base class of this library's errors that have no closer JDK exception (see {@link
 * AgentstreamFailure} for the others): {@link HarnessNotFoundException}, {@link
 * SpawnFailedException}, {@link CancelledException}, {@link TimedOutException}, … Its message is
 * the core's, with the core's advice.
 */
public abstract class AgentstreamException extends RuntimeException implements AgentstreamFailure {
    private static final long serialVersionUID = 1L;

    private final ErrorKind kind;

    /**
     * An error of one kind.
     *
     * @param kind the core's error kind
     * @param message the message
     */
    protected AgentstreamException(ErrorKind kind, String message) {
        super(message);
        this.kind = kind;
    }

    @Override
    public ErrorKind kind() {
        return kind;
    }
}
