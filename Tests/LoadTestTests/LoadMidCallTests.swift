import Bot
import FrameCrypto
import Foundation
import LoadTest
import Testing
import TestSupport

extension MediaScene {
/// Subscribers joining a call already going: each gets a picture once the feed's next keyframe
/// comes (the shared encoder's, at most one keyframe interval away; Janus's PLI cannot make an
/// earlier one). Measured from the subscriber's join to its first opened IDR access unit.
@Suite struct LoadMidCallTests {
    @Test("8 subscribers joining mid-call (2 a second) each open a keyframe of the feed: a first picture; join → first picture printed as p50/p95")
    func firstPicture() async throws {
        let room = try await Scene.createRoom(), ring = KeyRing(current: .random())
        let interval = Double(VideoSettings.phone.keyframeMilliseconds) / 1000
        let senders = Task { try await LoadRun(plan: try LoadVideoTests.plan(room: room, publishers: 1, subscribers: 0, ring: ring, seconds: 16)).run() }
        defer { senders.cancel() }
        try await Task.sleep(for: .seconds(3))
        // Joins spread over 4 s, two keyframe intervals: they land at every point of the cycle.
        var plan = try LoadVideoTests.plan(room: room, publishers: 0, subscribers: 8, ring: ring, seconds: 3)
        plan.ramp = 2
        let late = try await LoadRun(plan: plan).run()
        _ = try await senders.value

        let subs = late.bots.filter { $0.role == .subscriber }
        let times = subs.compactMap(\.firstKeyframeSeconds)
        let first = LoadSummary(late).joinSeconds["first_keyframe"]
        print(String(format: "load mid-call: join → first picture (keyframe opened) p50 %.2f s, p95 %.2f s, max %.2f s over %d subscribers; keyframe interval %.2f s; join → first decrypted frame p50 %.2f s",
                     first?.p50 ?? .nan, first?.p95 ?? .nan, first?.max ?? .nan, times.count, interval, LoadSummary(late).joinSeconds["first_decrypted"]?.p50 ?? .nan))
        #expect(subs.count == 8 && times.count == 8, "subscribers with a first picture: \(times.count) of \(subs.count)")
        #expect(subs.allSatisfy { $0.decryptFailuresTotal == 0 }, "\(subs.map(\.decryptFailures))")
    }
}
}
