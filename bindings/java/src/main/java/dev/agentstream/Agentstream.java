package dev.agentstream;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Properties;

/** The library itself: versions and the channel-name rule. */
public final class Agentstream {
    private Agentstream() {}

    /**
     * The version of the loaded native library ({@code agentstream_version()}).
     *
     * @return e.g. {@code 0.1.0}
     */
    public static String version() {
        return Native.version();
    }

    /**
     * The version of this jar (the Cargo workspace's; equal to {@link #version()} for a jar that
     * carries its own library).
     *
     * @return e.g. {@code 0.1.0}
     */
    public static String jarVersion() {
        try (InputStream in = Agentstream.class.getResourceAsStream("agentstream.properties")) {
            Properties p = new Properties();
            if (in != null) {
                p.load(in);
            }
            return p.getProperty("version", "unknown");
        } catch (IOException e) {
            return "unknown";
        }
    }

    /**
     * Where the native library was loaded from: {@code classpath:native/linux-x86_64/libagentstream.so}
     * a file path (the {@code agentstream.library} property or {@code AGENTSTREAM_LIBRARY}), or
     * the library path.
     *
     * @return the location
     */
    public static String libraryLocation() {
        Native.version();
        return NativeLibrary.loadedFrom;
    }

    /**
     * Checks a channel name with the rule of {@link Evolve#on}.
     *
     * @param name the name
     * @throws InvalidArgumentException unless it is {@code content}, {@code lifecycle}, {@code
     *     stdout} or {@code stderr} (the message lists the four)
     */
    public static void validateChannel(String name) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment n = Native.cstring(arena, name);
            Native.check(() -> (int) Native.CHANNEL_VALIDATE.invokeExact(n));
        }
    }

    /** Makes the library panic at its API edge (tests: a panic is a {@link PanicException}). */
    static void testingPanic() {
        Native.check(() -> (int) Native.TESTING_PANIC.invokeExact());
    }
}
