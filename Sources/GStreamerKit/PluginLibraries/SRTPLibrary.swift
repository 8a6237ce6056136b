#if canImport(Glibc)
import Glibc
#endif

/// Which libsrtp2 the process encrypts RTP with.
///
/// Debian's libsrtp2 is built against NSS, whose AES sets up a PK11 context for every packet:
/// a quarter of a sending bot's CPU (docs/performance.md). `scripts/build-libsrtp` builds the
/// same release against OpenSSL. Loading it before GStreamer's srtp plugin makes the plugin's
/// `libsrtp2.so.1` resolve to it: the dynamic linker reuses a library already loaded under
/// that soname.
///
/// An explicit opt-in of the commands that run webrtcbin (sfubot's `SRTPPreload`), made before
/// any SRTP element exists; tests and commands without SRTP use the system's (docs/performance.md
/// says what that costs). Beside ReceiveBuffer.swift: both reach a library a GStreamer plugin
/// loads (libsrtp2, libnice) by its soname, behind the plugin's back.
public enum SRTPLibrary {
    /// Where `scripts/build-libsrtp` installs it.
    public static let defaultPath = "/usr/local/lib/sfubot/libsrtp2.so.1"

    /// The library loaded by `preload()`, or nil when the system's is used.
    public nonisolated(unsafe) private(set) static var loaded: String?

    /// Why the system's library is used, when it is (for a log line).
    public nonisolated(unsafe) private(set) static var fallbackReason: String?

    /// Loads `$SFUBOT_LIBSRTP` (empty or "system": the system's), else `defaultPath` if it
    /// exists. Call it before the first SRTP element is made (GStreamer's srtp plugin loads
    /// libsrtp2 then); later calls do nothing. `loaded` / `fallbackReason` say what came of it.
    public static func preload() { _ = once }

    private static let once: Void = load()

    private static func load() {
        // Too late: the plugin, or something else, already resolved the soname.
        if let already = dlopen("libsrtp2.so.1", RTLD_NOW | RTLD_NOLOAD) {
            dlclose(already)
            fallbackReason = "libsrtp2 was loaded before the preload (an SRTP element was made first)"
            return
        }
        let env = getenv("SFUBOT_LIBSRTP").map { String(cString: $0) }
        if env == "" || env == "system" {
            fallbackReason = "SFUBOT_LIBSRTP asks for the system's"
            return
        }
        let path = env ?? defaultPath
        guard access(path, R_OK) == 0 else {
            fallbackReason = "\(path) is not installed (scripts/build-libsrtp)"
            return
        }
        guard dlopen(path, RTLD_NOW | RTLD_GLOBAL) != nil else {
            fallbackReason = "\(path) does not load: " + (dlerror().map { String(cString: $0) } ?? "unknown error")
            return
        }
        loaded = path
    }
}
