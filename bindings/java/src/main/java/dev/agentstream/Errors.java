package dev.agentstream;

import dev.agentstream.generated.ErrorKind;
import dev.agentstream.generated.ErrorTable;

/** The one mapping from the core's error kinds (the C ABI's status codes) to exception classes. */
final class Errors {
    private Errors() {}

    /** The exception for a non-zero status of the C ABI and the core's message. */
    static RuntimeException of(int status, String message) {
        ErrorTable.Row row = ErrorTable.ofCode(status);
        if (row == null) {
            return new InternalException("agentstream returned the unknown status " + status + " ("
                    + Native.statusName(status) + "): the library is newer than this jar? " + message);
        }
        return of(row.kind(), message);
    }

    /**
     * The exception of a kind. The switch has no default, so a kind added to the core's table
     * does not compile until it has its class.
     */
    static RuntimeException of(ErrorKind kind, String message) {
        return switch (kind) {
            case HARNESS_NOT_FOUND -> new HarnessNotFoundException(message);
            case ALREADY_RUNNING -> new AlreadyRunningException(message);
            case SPAWN_FAILED -> new SpawnFailedException(message);
            case INVALID_ARGUMENT -> new InvalidArgumentException(message);
            case CANCELLED -> new CancelledException(message);
            case TIMEOUT -> new TimedOutException(message);
            case DECODE_LIMIT -> new DecodeLimitException(message);
            case INTERNAL -> new InternalException(message);
            case NOT_RUNNING -> new NotRunningException(message);
            case NULL_ARGUMENT -> new NullArgumentException(message);
            case INVALID_HANDLE -> new InvalidHandleException(message);
            case BUSY -> new BusyException(message);
            case BUFFER_TOO_SMALL -> new BufferTooSmallException(message);
            case STILL_RUNNING -> new StillRunningException(message);
            case PANIC -> new PanicException(message);
            case CANNOT_RESUME -> new CannotResumeException(message);
            case UNSUPPORTED -> new UnsupportedPlatformException(message);
        };
    }

    /** An invalid_argument error raised by this binding before calling the core (Java-only checks). */
    static InvalidArgumentException invalidArgument(String message) {
        return new InvalidArgumentException(message + "; " + ErrorTable.of(ErrorKind.INVALID_ARGUMENT).advice());
    }

    /** The error for a call on a closed object. */
    static InvalidHandleException closed(String what) {
        return new InvalidHandleException(what + " is closed; " + ErrorTable.of(ErrorKind.INVALID_HANDLE).advice());
    }
}
