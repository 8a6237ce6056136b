import Foundation
@testable import Service
import Testing

/// `key.file` paths come from clients: only a regular file of a key's size is read.
@Suite struct KeyFileTests {
    @Test("a key file of 64 hex characters is read; /dev/zero, a folder, a missing and a large file are refused with key.file", .timeLimit(.minutes(1)))
    func refusesWhatIsNoKeyFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-keyfile-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let good = dir.appendingPathComponent("call.key"), big = dir.appendingPathComponent("big")
        try Data((String(repeating: "3c", count: 32) + "\n").utf8).write(to: good)
        try Data(repeating: 0x33, count: KeyFile.maxBytes + 1).write(to: big)
        _ = try KeyFile.read(good.path)
        // /dev/zero used to be read without end (the service's memory grew, its requests hung).
        for path in ["/dev/zero", dir.path, dir.appendingPathComponent("missing").path, big.path] {
            let started = ContinuousClock.now
            #expect(throws: RequestProblem.self, "\(path)") { try KeyFile.read(path) }
            // A read without end is what this catches: seconds, not the microseconds it takes.
            #expect(ContinuousClock.now - started < .seconds(5), "\(path)")
            #expect((try? KeyFile.read(path)) == nil)
        }
        do { _ = try KeyFile.read("/dev/zero") } catch { #expect(error.status == 400 && error.message.hasPrefix("key.file:"), "\(error.message)") }
    }
}
