import Foundation
import Logging
import Spool
import Testing

struct Item: Retrying, Equatable {
    var name: String
    var attempts = 0
    var notBefore = Date()
    var created = Date()
    var lastError: String?
}

private func temporary() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-spool-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

@Suite struct SpoolTests {
    @Test("entries written, read back by a new Spool on the same directory, removed; files are 0600")
    func roundTrip() throws {
        let dir = try temporary()
        defer { try? FileManager.default.removeItem(at: dir) }
        let spool = try Spool<Item>(directory: dir, what: "test spool")
        try spool.put("a-1", Item(name: "one"))
        try spool.put("b.2", Item(name: "two"))
        let again = try Spool<Item>(directory: dir, what: "test spool")
        #expect(again.load().entries.map(\.id) == ["a-1", "b.2"])
        #expect(try again.get("b.2")?.name == "two")
        let mode = try FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent("a-1.json").path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        try again.remove("a-1")
        #expect(spool.load().entries.map(\.id) == ["b.2"])
    }

    @Test("add is once per id; ids that could name a path are refused")
    func addOnce() throws {
        let dir = try temporary()
        defer { try? FileManager.default.removeItem(at: dir) }
        let spool = try Spool<Item>(directory: dir, what: "test spool")
        #expect(try spool.add("x", Item(name: "first")))
        #expect(try !spool.add("x", Item(name: "second")))
        #expect(try spool.get("x")?.name == "first")
        for bad in ["../x", "a/b", ".hidden", "", "sp ace"] {
            #expect(throws: SpoolError.self) { try spool.put(bad, Item(name: "bad")) }
        }
    }

    @Test("a temporary file is never read as an entry, and left alone while this process runs (a put may be under way); a restart removes it; an unreadable entry is reported, kept")
    func crashLeftovers() throws {
        let dir = try temporary()
        defer { try? FileManager.default.removeItem(at: dir) }
        let spool = try Spool<Item>(directory: dir, what: "test spool")
        try spool.put("ok", Item(name: "fine"))
        try Data("{\"na".utf8).write(to: dir.appendingPathComponent(".ok.1234.tmp"))
        try Data("not json".utf8).write(to: dir.appendingPathComponent("broken.json"))
        let loaded = spool.load()
        #expect(loaded.entries.map(\.id) == ["ok"])
        #expect(loaded.unreadable == ["broken.json"])
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent(".ok.1234.tmp").path))
        _ = try Spool<Item>(directory: dir, what: "test spool")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent(".ok.1234.tmp").path))
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("broken.json").path))
    }

    @Test("backoff doubles from first to maximum; expiry counts from creation")
    func schedule() {
        let s = RetrySchedule(first: .seconds(5), maximum: .seconds(60), giveUpAfter: .seconds(100))
        #expect((1...6).map { s.delay(afterAttempts: $0, jitter: 1) } == [.seconds(5), .seconds(10), .seconds(20), .seconds(40), .seconds(60), .seconds(60)])
        #expect(s.delay(afterAttempts: 200, jitter: 1) == .seconds(60))
        #expect(s.delay(afterAttempts: 2, jitter: 0.75) == .milliseconds(7500))
        let t0 = Date()
        #expect(!s.expired(created: t0, now: t0.addingTimeInterval(99)))
        #expect(s.expired(created: t0, now: t0.addingTimeInterval(100)))
    }

    @Test("the runner retries a failing entry with its tries and error on disk; a new runner after a 'restart' finishes it")
    func retriesSurviveRestart() async throws {
        let dir = try temporary()
        defer { try? FileManager.default.removeItem(at: dir) }
        let schedule = RetrySchedule(first: .milliseconds(50), maximum: .milliseconds(200))
        let spool = try Spool<Item>(directory: dir, what: "test spool")
        let first = SpoolRunner(spool: spool, schedule: schedule, logger: Logger(label: "test"))
        try first.add("job", Item(name: "job"))
        let tries = Counter()
        let failing = Task { await first.run { _, _ in tries.bump(); return .retry("down") } }
        #expect(await waitFor { tries.value >= 3 })
        failing.cancel()
        await failing.value
        let kept = try #require(try spool.get("job"))
        #expect(kept.attempts >= 3 && kept.lastError == "down")

        let second = SpoolRunner(spool: try Spool<Item>(directory: dir, what: "test spool"), schedule: schedule, logger: Logger(label: "test"))
        let seen = Counter()
        let working = Task { await second.run { _, item in seen.bump(); return item.attempts >= 3 ? .done : .retry("no") } }
        #expect(await waitFor { spool.load().entries.isEmpty })
        working.cancel()
        #expect(seen.value == 1)
    }

    @Test("a try cut short by cancellation (a shutdown) is not counted: the entry stays as it was")
    func cancelledTryNotCounted() async throws {
        let dir = try temporary()
        defer { try? FileManager.default.removeItem(at: dir) }
        let spool = try Spool<Item>(directory: dir, what: "test spool")
        let runner = SpoolRunner(spool: spool, schedule: RetrySchedule(first: .seconds(1), maximum: .seconds(1)), logger: Logger(label: "test"))
        try runner.add("slow", Item(name: "slow"))
        let started = Counter()
        let task = Task { await runner.run { _, _ in
            started.bump()
            try? await Task.sleep(for: .seconds(30))
            return .retry("interrupted")
        } }
        #expect(await waitFor { started.value == 1 })
        task.cancel()
        await task.value
        let kept = try #require(try spool.get("slow"))
        #expect(kept.attempts == 0 && kept.lastError == nil)
    }

    @Test("an entry added while the runner sleeps is tried at once, not after the long wait")
    func wakesOnAdd() async throws {
        let dir = try temporary()
        defer { try? FileManager.default.removeItem(at: dir) }
        let runner = SpoolRunner(spool: try Spool<Item>(directory: dir, what: "test spool"),
                                 schedule: RetrySchedule(first: .seconds(3600), maximum: .seconds(3600)), logger: Logger(label: "test"))
        let done = Counter()
        let task = Task { await runner.run { _, _ in done.bump(); return .done } }
        try await Task.sleep(for: .milliseconds(100))
        try runner.add("late", Item(name: "late"))
        // The runner's idle wait is an hour: anything under the limit below is the wake-up.
        #expect(await waitFor { done.value == 1 })
        task.cancel()
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func bump() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

func waitFor(_ seconds: Double = 30, _ condition: () -> Bool) async -> Bool {
    let end = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < end {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}
