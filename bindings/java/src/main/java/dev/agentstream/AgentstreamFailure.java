package dev.agentstream;

import dev.agentstream.generated.ErrorKind;
import dev.agentstream.generated.ErrorTable;

/**
 * What every exception of this library reports: the core's error kind, from the one error table
 * every language shares (its stable code is the C ABI's status), and the core's advice.
 *
 * <p>Each kind has its own exception class. Most extend {@link AgentstreamException}; the kinds
 * that are plain misuse extend the JDK's exception for it, so code that already catches those
 * keeps working: {@code invalid_argument} is an {@link IllegalArgumentException}; {@code
 * already_running}, {@code not_running}, {@code invalid_handle} (a closed object), {@code busy}
 * and {@code still_running} are {@link IllegalStateException}s; {@code unsupported} is an {@link
 * UnsupportedOperationException}. To handle every error of this library in one place, catch
 * {@link RuntimeException} and test {@code e instanceof AgentstreamFailure f}.
 */
public interface AgentstreamFailure {
    /**
     * The core's error kind.
     *
     * @return the kind
     */
    ErrorKind kind();

    /**
     * The kind's stable number (1001 …), the C ABI's status code.
     *
     * @return the code
     */
    default int code() {
        return ErrorTable.of(kind()).code();
    }

    /**
     * What the caller can do about it (the core's advice for the kind).
     *
     * @return the advice
     */
    default String advice() {
        return ErrorTable.of(kind()).advice();
    }
}
