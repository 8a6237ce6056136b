import Foundation
import Testing
import TestSupport

/// 200 POSTs at once against `--max-jobs 50`, as the probe that once left a job in `stopping`
/// for good (a GStreamer teardown joining a streaming thread on Swift's cooperative pool) and a
/// SIGTERM that hung for minutes: past the limit 429 with Retry-After, every admitted job runs
/// and ends, and SIGTERM exits within the documented deadline.
extension MediaScene {
@Suite struct ServeBurstTests {
    let key = String(repeating: "6b", count: 32)

    @Test("200 concurrent POSTs with --max-jobs 50: 150 answered 429, no job stuck, SIGTERM exits within 30 s")
    func burst() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("serve-burst")
        let tone = try await Audio.tone(440, seconds: 3, in: dir)
        let serve = try await ServeProcess.start(port: 18503, in: dir, extra: ["--max-jobs", "50"])
        defer { serve.process.signal(SIGKILL) }
        let started = ContinuousClock.now
        let statuses = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
            for i in 0..<200 {
                group.addTask {
                    let r = try await serve.request("POST", "/v1/playbacks", json: [
                        "room": room, "key": ["hex": key], "file": tone.lastPathComponent, "loop": true, "display": "\(i + 100):Burst",
                    ])
                    return (r.status, r.status == 429 ? r.header("Retry-After") : nil)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let answered = ContinuousClock.now - started
        let admitted = statuses.filter { $0.0 == 201 }.count, refused = statuses.filter { $0.0 == 429 }
        print("serve burst: 200 POSTs answered in \(answered): \(admitted) × 201, \(refused.count) × 429")
        #expect(admitted == 50 && refused.count == 150, "\(statuses.map(\.0).sorted())")
        #expect(refused.allSatisfy { $0.1 != nil }, "every 429 says when to come back")
        // Every admitted job gets going (running), none stays starting.
        var states: [String: Int] = [:]
        let deadline = ContinuousClock.now + .seconds(90)
        while ContinuousClock.now < deadline {
            let list = try await serve.request("GET", "/v1/playbacks?limit=200").list()
            states = list.reduce(into: [:]) { $0[$1["state"] as? String ?? "?", default: 0] += 1 }
            if states["running", default: 0] + states["failed", default: 0] + states["done", default: 0] == 50 { break }
            try await Task.sleep(for: .seconds(1))
        }
        print("serve burst: job states \(states) after \(ContinuousClock.now - started)")
        #expect(states["running", default: 0] == 50, "\(states)")
        let term = ContinuousClock.now
        serve.process.signal(SIGTERM)
        let status = await serve.process.exit(within: .seconds(45))
        print("serve burst: SIGTERM with 50 playbacks running → exit \(status.map(String.init) ?? "none") after \(ContinuousClock.now - term)")
        #expect(status == 0, "a clean stop within the 25 s graceful deadline")
    }
}
}
