import Foundation
import Glibc
import GStreamerKit
import Testing
import TestSupport

/// `sfubot load` opts in to the OpenSSL libsrtp2 that scripts/install-deps builds, not Debian's
/// NSS build (docs/performance.md), before GStreamer starts. Checked in a process of its own: in
/// this one another test may have made an SRTP element (and loaded the system's) first.
@Suite struct SRTPLibraryTests {
    /// `.build/<config>/sfubot`, beside the test bundle.
    static let binary: URL = {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        while dir.path != "/", !FileManager.default.isExecutableFile(atPath: dir.appendingPathComponent("sfubot").path) {
            dir = dir.deletingLastPathComponent()
        }
        return dir.appendingPathComponent("sfubot")
    }()

    /// sfubot's output until a line with `marker` appears, and the libraries it had mapped then
    /// (it is interrupted after), or until it exits.
    static func output(_ arguments: [String], until marker: String) async throws -> (text: String, maps: String) {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        // Blocking reads on a thread of our own, never on the cooperative pool.
        return await withCheckedContinuation { done in
            Thread.detachNewThread {
                var text = ""
                // Whole lines only: a line is complete once a newline follows it.
                while !text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().contains(where: { $0.contains(marker) }),
                      case let chunk = pipe.fileHandleForReading.availableData, !chunk.isEmpty {   // read(upToCount:) waits for all of it
                    text += String(decoding: chunk, as: UTF8.self)
                }
                let maps = Self.readProcFile("/proc/\(process.processIdentifier)/maps")
                if process.isRunning { process.interrupt() }
                process.waitUntilExit()
                done.resume(returning: (text, maps))
            }
        }
    }

    /// /proc files report size 0: read(2) to the end.
    static func readProcFile(_ path: String) -> String {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return "cannot open \(path): errno \(errno)" }
        defer { Glibc.close(fd) }
        var bytes: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 { return "cannot read \(path): errno \(errno)" }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func sfubotLoadPreloadsTheOpenSSLBuild() async throws {
        // A "Janus" that takes the connection and never answers keeps sfubot running past the
        // SRTP line (the bot waits for its WebSocket) while its mappings are read.
        let silent = try SilentListener()

        let (text, maps) = try await Self.output(["load", "--janus", "ws://127.0.0.1:\(silent.port)", "--room", "1", "--no-e2ee",
                                                  "--publishers", "1", "--retries", "0", "--duration", "1"], until: "SRTP:")
        #expect(text.contains("SRTP: libsrtp2 built with OpenSSL (\(SRTPLibrary.defaultPath))"),
                "not preloaded — run scripts/install-deps: \(text.prefix(2000))")
        // The only libsrtp2.so.1 mapped: GStreamer's srtp plugin, loaded later, resolves the
        // soname to it (the dynamic linker reuses a library loaded under that soname).
        let srtp = Set(maps.split(separator: "\n").compactMap { line in
            line.split(separator: " ", omittingEmptySubsequences: true).last.map(String.init)
        }.filter { $0.hasSuffix("/libsrtp2.so.1") })
        #expect(srtp == [SRTPLibrary.defaultPath], "libsrtp2 mapped from \(srtp); output: \(text)")
    }
}
