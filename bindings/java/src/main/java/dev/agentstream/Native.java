package dev.agentstream;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BOOLEAN;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;

/**
 * The C ABI (include/agentstream.h) as downcall handles, and the few rules every call shares:
 * a non-zero status is the core's error code, its message is read on the same thread right
 * after the call (the library keeps it thread-local), and owned strings are copied into Java
 * memory and freed at once. Nothing here keeps native memory beyond a call, except the handles
 * the library returns (checked numbers: a freed one is an error, never a crash).
 *
 * <p>Every method runs on the calling Java thread; no native thread ever calls into the JVM
 * (runs are pulled in batches, see {@link RunPuller}; the decoder's upcall runs on the thread
 * that called feed, see {@link Decoder}).
 */
final class Native {
    private Native() {}

    static final Linker LINKER = Linker.nativeLinker();
    static final SymbolLookup LIB = NativeLibrary.load();

    /** {@code AGENTSTREAM_NAMING_CAMEL}: validation messages spell fields as Java does (timeoutMs). */
    static final int NAMING_CAMEL = 1;

    /** {@code agentstream_next} values of a pulled batch. */
    static final int NEXT_BATCH = 2;
    static final int NEXT_TIMEOUT = 3;
    static final int NEXT_END = 4;

    private static MethodHandle fn(String name, FunctionDescriptor descriptor) {
        MemorySegment symbol = LIB.find(name).orElseThrow(() -> new UnsatisfiedLinkError(
                "agentstream: " + name + " is missing from libagentstream (" + NativeLibrary.loadedFrom
                        + "): the library is older than this jar"));
        return LINKER.downcallHandle(symbol, descriptor);
    }

    private static FunctionDescriptor status(java.lang.foreign.MemoryLayout... args) {
        return FunctionDescriptor.of(JAVA_INT, args);
    }

    // ---- library ----
    static final MethodHandle VERSION = fn("agentstream_version", FunctionDescriptor.of(ADDRESS));
    static final MethodHandle LAST_ERROR = fn("agentstream_last_error_message", status(ADDRESS, JAVA_LONG, ADDRESS));
    static final MethodHandle STATUS_NAME = fn("agentstream_status_name", FunctionDescriptor.of(ADDRESS, JAVA_INT));
    static final MethodHandle STRING_FREE = fn("agentstream_string_free", FunctionDescriptor.ofVoid(ADDRESS));
    static final MethodHandle CHANNEL_VALIDATE = fn("agentstream_channel_validate", status(ADDRESS));

    // ---- decoder ----
    static final MethodHandle DECODER_NEW = fn("agentstream_decoder_new_with_options", status(ADDRESS, JAVA_LONG, ADDRESS));
    static final MethodHandle DECODER_FEED = fn("agentstream_decoder_feed", status(ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS));
    static final MethodHandle DECODER_FINISH = fn("agentstream_decoder_finish", status(ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle DECODER_STATS = fn("agentstream_decoder_stats_json", status(ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle DECODER_DIAGNOSTICS = fn("agentstream_decoder_take_diagnostics_json", status(ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle DECODER_SESSION_ID = fn("agentstream_decoder_session_id", status(ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle DECODER_FREE = fn("agentstream_decoder_free", FunctionDescriptor.ofVoid(ADDRESS));
    static final MethodHandle DECODER_SET_REDACT = fn("agentstream_decoder_set_redact", status(ADDRESS, JAVA_BOOLEAN));

    // ---- replay ----
    static final MethodHandle REPLAY = fn("agentstream_replay_json", status(ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS, ADDRESS));

    // ---- session (the core's Client) ----
    static final MethodHandle SESSION_NEW = fn("agentstream_session_new_json", status(ADDRESS, JAVA_INT, ADDRESS));
    static final MethodHandle SESSION_AGENT = fn("agentstream_session_agent", FunctionDescriptor.of(ADDRESS, ADDRESS));
    static final MethodHandle SESSION_SUBSCRIBE = fn("agentstream_session_subscribe", status(ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle SESSION_OFF = fn("agentstream_session_off", status(ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle SESSION_OFF_ID = fn("agentstream_session_off_id", status(ADDRESS, JAVA_LONG, ADDRESS));
    static final MethodHandle SESSION_START = fn("agentstream_session_start", status(ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle SESSION_STATUS = fn("agentstream_session_status_json", status(ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle SESSION_SESSION_ID = fn("agentstream_session_session_id", status(ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle SESSION_SET_SESSION_ID = fn("agentstream_session_set_session_id", status(ADDRESS, ADDRESS));
    static final MethodHandle SESSION_SET_BUDGET = fn("agentstream_session_set_budget", status(ADDRESS, ADDRESS));
    static final MethodHandle SESSION_PAUSE = fn("agentstream_session_pause", status(ADDRESS));
    static final MethodHandle SESSION_RESUME = fn("agentstream_session_resume", status(ADDRESS));
    static final MethodHandle SESSION_INTERRUPT = fn("agentstream_session_interrupt", status(ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle SESSION_KILL = fn("agentstream_session_kill", status(ADDRESS, ADDRESS));
    static final MethodHandle SESSION_FREE = fn("agentstream_session_free", FunctionDescriptor.ofVoid(ADDRESS));

    // ---- run ----
    static final MethodHandle RUN_WAIT = fn("agentstream_run_wait", status(ADDRESS, JAVA_LONG, ADDRESS, ADDRESS));
    static final MethodHandle RUN_NEXT_BATCH = fn("agentstream_run_next_batch_json",
            status(ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle RUN_CANCEL = fn("agentstream_run_cancel", status(ADDRESS, ADDRESS));
    static final MethodHandle RUN_LEAVE = fn("agentstream_run_leave", status(ADDRESS));
    static final MethodHandle RUN_HANDLER_FAILED = fn("agentstream_run_handler_failed",
            status(ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS));
    static final MethodHandle RUN_ID = fn("agentstream_run_id", status(ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle RUN_PRESSURE = fn("agentstream_run_pressure_json", status(ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle RUN_FREE = fn("agentstream_run_free", FunctionDescriptor.ofVoid(ADDRESS));

    // ---- budget ----
    static final MethodHandle BUDGET_NEW = fn("agentstream_budget_new", status(JAVA_LONG, JAVA_LONG, ADDRESS));
    static final MethodHandle BUDGET_ACTIVE = fn("agentstream_budget_active", status(ADDRESS, ADDRESS));
    static final MethodHandle BUDGET_FREE = fn("agentstream_budget_free", FunctionDescriptor.ofVoid(ADDRESS));

    // ---- testing ----
    static final MethodHandle TESTING_PANIC = fn("agentstream_testing_panic", status());

    /** Frees the native objects of handles never closed, once unreachable: one thread for them all. */
    static final java.lang.ref.Cleaner CLEANER = java.lang.ref.Cleaner.create();

    /**
     * A {@link #CLEANER} action: frees one native object with its {@code _free} function
     * ({@code Cleanable.clean} runs it at most once). Refers to the handle, never to its owner.
     */
    record Free(MethodHandle free, MemorySegment handle) implements Runnable {
        @Override
        public void run() {
            try {
                free.invokeExact(handle);
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }
    }

    /** A call of a downcall handle: the handle's exceptions are the JVM's own (a bug). */
    @FunctionalInterface
    interface Call {
        int invoke() throws Throwable;
    }

    /**
     * Runs one status-returning call and throws the core's error for a non-zero status, with the
     * message read right after it, on this thread.
     */
    static void check(Call call) {
        int status;
        try {
            status = call.invoke();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("agentstream: a native call failed: " + t, t);
        }
        if (status != 0) {
            throw Errors.of(status, lastError());
        }
    }

    /** The message of the last failed call on this thread. */
    static String lastError() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment len = arena.allocate(JAVA_LONG);
            int ignored = (int) LAST_ERROR.invokeExact(MemorySegment.NULL, 0L, len);
            long n = len.get(JAVA_LONG, 0);
            MemorySegment buf = arena.allocate(n + 1);
            ignored = (int) LAST_ERROR.invokeExact(buf, n + 1, len);
            return new String(buf.asSlice(0, Math.min(n, buf.byteSize())).toArray(JAVA_BYTE), StandardCharsets.UTF_8);
        } catch (Throwable t) {
            return "(the error message could not be read: " + t + ")";
        }
    }

    /** A static NUL-terminated string of the library. */
    static String staticString(MemorySegment p) {
        return p.equals(MemorySegment.NULL) ? "" : p.reinterpret(Long.MAX_VALUE).getString(0, StandardCharsets.UTF_8);
    }

    /** The library's version, agentstream_version(). */
    static String version() {
        try {
            return staticString((MemorySegment) VERSION.invokeExact());
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** agentstream_status_name: "ok", the core error kind's name, or "unknown". */
    static String statusName(int status) {
        try {
            return staticString((MemorySegment) STATUS_NAME.invokeExact(status));
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * A C string in {@code arena} (NULL for null): a name, an id, JSON. One holding a NUL is
     * refused: C would read only what comes before it (a channel {@code "content\0x"} taken as
     * {@code "content"}).
     */
    static MemorySegment cstring(Arena arena, String s) {
        if (s != null && s.indexOf('\0') >= 0) {
            String shown = s.length() > 60 ? s.substring(0, 60) + "…" : s;
            throw Errors.invalidArgument("a name or value passed to agentstream must not contain a NUL character (\\u0000): "
                    + Json.write(shown));
        }
        return s == null ? MemorySegment.NULL : arena.allocateFrom(s, StandardCharsets.UTF_8);
    }

    /**
     * Free text (a cancel's reason, a handler's message) as a C string: a NUL becomes U+FFFD, so
     * such a text is never refused (a cancel must act) nor cut short.
     */
    static MemorySegment ctext(Arena arena, String s) {
        return cstring(arena, s == null ? null : s.replace('\0', '\uFFFD'));
    }

    /**
     * Out-parameters of a call returning an owned string: {@code char **} and {@code size_t *}.
     * Reusable across calls on one thread.
     */
    static final class Owned {
        final MemorySegment ptr;
        final MemorySegment len;

        Owned(Arena arena) {
            ptr = arena.allocate(ADDRESS);
            len = arena.allocate(JAVA_LONG);
        }

        /** The bytes the last call returned (null for NULL), freed in the library. */
        byte[] take() {
            MemorySegment p = ptr.get(ADDRESS, 0);
            if (p.equals(MemorySegment.NULL)) {
                return null;
            }
            long n = len.get(JAVA_LONG, 0);
            try {
                return p.reinterpret(n).toArray(JAVA_BYTE);
            } finally {
                free(p);
                ptr.set(ADDRESS, 0, MemorySegment.NULL);
            }
        }

        /** The string the last call returned (null for NULL). */
        String takeString() {
            byte[] b = take();
            return b == null ? null : new String(b, StandardCharsets.UTF_8);
        }
    }

    static void free(MemorySegment ownedString) {
        try {
            STRING_FREE.invokeExact(ownedString);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Runs a call that returns one owned string through {@code (out, out_len)}. */
    @FunctionalInterface
    interface OwnedCall {
        int invoke(MemorySegment out, MemorySegment outLen) throws Throwable;
    }

    static byte[] ownedBytes(OwnedCall call) {
        try (Arena arena = Arena.ofConfined()) {
            Owned out = new Owned(arena);
            check(() -> call.invoke(out.ptr, out.len));
            return out.take();
        }
    }

    static String ownedString(OwnedCall call) {
        byte[] b = ownedBytes(call);
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    /** A bool out-parameter's value. */
    static boolean bool(MemorySegment out) {
        return out.get(JAVA_BOOLEAN, 0);
    }
}
