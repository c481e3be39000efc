package dev.agentstream;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;

/**
 * Finds and loads libagentstream once per JVM. In order:
 *
 * <ol>
 *   <li>the file named by the system property {@code agentstream.library} or the environment
 *       variable {@code AGENTSTREAM_LIBRARY} (a development build, a system install);
 *   <li>the copy inside this jar, {@code native/<os>-<arch>/libagentstream.so}, extracted to a
 *       private temporary directory (deleted when the JVM exits) because a shared library can
 *       only be mapped from a file;
 *   <li>{@code libagentstream.so} on {@code java.library.path} / the dynamic linker's path.
 * </ol>
 */
final class NativeLibrary {
    private NativeLibrary() {}

    /** Where the library was loaded from (for messages and tests). */
    static volatile String loadedFrom = "";

    /** The symbols of the loaded library (mapped for the life of the JVM). */
    static SymbolLookup load() {
        String explicit = System.getProperty("agentstream.library");
        if (explicit == null || explicit.isEmpty()) {
            explicit = System.getenv("AGENTSTREAM_LIBRARY");
        }
        if (explicit != null && !explicit.isEmpty()) {
            Path path = Path.of(explicit).toAbsolutePath();
            if (!Files.isRegularFile(path)) {
                throw new UnsatisfiedLinkError("agentstream: the library named by agentstream.library / "
                        + "AGENTSTREAM_LIBRARY does not exist: " + path);
            }
            loadedFrom = path.toString();
            return SymbolLookup.libraryLookup(path, Arena.global());
        }
        String resource = "native/" + platform() + "/" + System.mapLibraryName("agentstream");
        try (InputStream in = NativeLibrary.class.getClassLoader().getResourceAsStream(resource)) {
            if (in != null) {
                Path dir = Files.createTempDirectory("agentstream-",
                        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
                Path file = dir.resolve(System.mapLibraryName("agentstream"));
                Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
                removeExtracted(dir, file);
                loadedFrom = "classpath:" + resource;
                return SymbolLookup.libraryLookup(file, Arena.global());
            }
        } catch (IOException e) {
            throw linkError("could not extract " + resource + " from the jar: " + e.getMessage());
        }
        try {
            loadedFrom = System.mapLibraryName("agentstream") + " (library path)";
            return SymbolLookup.libraryLookup(System.mapLibraryName("agentstream"), Arena.global());
        } catch (IllegalArgumentException e) {
            throw linkError("libagentstream was not found: this jar has no native/" + platform()
                    + "/ library (platform not supported by this build), agentstream.library is not set, "
                    + "and the dynamic linker did not find " + System.mapLibraryName("agentstream"));
        }
    }

    /**
     * Removes the extracted copy when the JVM exits. Not sooner: a run's supervisor is this file
     * executed as a program, so it must keep its name while runs can start. {@code deleteOnExit}
     * deletes in reverse order of registration, so the directory is registered first: deleted
     * before the file it holds, it stayed behind (one empty directory per JVM).
     */
    private static void removeExtracted(Path dir, Path file) {
        dir.toFile().deleteOnExit();
        file.toFile().deleteOnExit();
    }

    /** {@code linux-x86_64}, {@code linux-aarch64}, {@code macos-aarch64}, … */
    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        String o = os.contains("linux") ? "linux" : os.contains("mac") ? "macos" : os.contains("win") ? "windows" : os;
        String a = switch (arch) {
            case "amd64", "x86_64" -> "x86_64";
            case "aarch64", "arm64" -> "aarch64";
            default -> arch;
        };
        return o + "-" + a;
    }

    private static UnsatisfiedLinkError linkError(String message) {
        return new UnsatisfiedLinkError("agentstream: " + message);
    }
}
