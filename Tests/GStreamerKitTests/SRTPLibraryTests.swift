import Foundation
import GStreamerKit
import Testing

/// sfubot encrypts RTP with the OpenSSL build of libsrtp2 that scripts/install-deps installs,
/// not Debian's NSS build (docs/performance.md).
@Suite struct SRTPLibraryTests {
    @Test func gstreamersSrtpPluginRunsOnTheOpenSSLBuild() throws {
        // Loading srtpenc loads the plugin and, through it, whichever libsrtp2.so.1 resolves.
        let pipeline = try Pipeline(description: "fakesrc num-buffers=0 ! srtpenc ! fakesink")
        _ = pipeline
        #expect(SRTPLibrary.loaded == SRTPLibrary.defaultPath,
                "not preloaded: \(SRTPLibrary.fallbackReason ?? "?") — run scripts/install-deps")
        let maps = try String(contentsOfFile: "/proc/self/maps", encoding: .utf8)
        let srtp = Set(maps.split(separator: "\n").compactMap { line in
            line.split(separator: " ", omittingEmptySubsequences: true).last.map(String.init)
        }.filter { $0.hasSuffix("/libsrtp2.so.1") })
        #expect(srtp == [SRTPLibrary.defaultPath], "libsrtp2 mapped from \(srtp)")
    }
}
