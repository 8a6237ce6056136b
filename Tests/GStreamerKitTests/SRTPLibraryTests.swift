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
        // /proc files report size 0: read to the end, not by the size (a long map was cut short).
        let handle = try #require(FileHandle(forReadingAtPath: "/proc/self/maps"))
        let maps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        try handle.close()
        let srtp = Set(maps.split(separator: "\n").compactMap { line in
            line.split(separator: " ", omittingEmptySubsequences: true).last.map(String.init)
        }.filter { $0.hasSuffix("/libsrtp2.so.1") })
        #expect(srtp == [SRTPLibrary.defaultPath], "libsrtp2 mapped from \(srtp)")
    }
}
