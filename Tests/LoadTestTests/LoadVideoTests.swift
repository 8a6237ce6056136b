import Bot
import FrameCrypto
import Foundation
import LoadTest
import Testing
import TestSupport

extension MediaScene {
/// `load --video` at the phone preset on the direct paths: video sealed once per frame,
/// packetized by rtph264pay, protected and sent past webrtcbin; received past its queue.
@Suite struct LoadVideoTests {
    static func plan(room: Int64, publishers: Int, subscribers: Int, ring: KeyRing, seconds: Int) throws -> LoadPlan {
        var plan = try LoadRunTests.plan(room: room, publishers: publishers, subscribers: subscribers, ring: ring, seconds: seconds)
        plan.video = true
        plan.videoSettings = .phone
        return plan
    }

    @Test("A/V at the phone preset, direct paths: every subscriber decrypts both publishers' video, none fails; 1 in 2 decodes 640x360 pictures")
    func avDirect() async throws {
        var plan = try Self.plan(room: try await Scene.createRoom(), publishers: 2, subscribers: 3, ring: KeyRing(current: .random()), seconds: 5)
        plan.decodeEvery = 2
        #expect(plan.sendPath == .direct && plan.receivePath == .direct, "the defaults are the paths under test")
        let result = try await LoadRun(plan: plan).run()
        let summary = LoadSummary(result)
        #expect(summary.held, "\(summary.problems)")
        let shard = try #require(result.shards.first)
        #expect(shard.directFallbacks == 0, "publishers that could not send directly")
        // Every IDR a publisher sent went the direct path (webrtcbin would not count it).
        let keyframes = try #require(summary.publishers.keyframes, "no publisher sent video directly")
        #expect(keyframes.sent >= 2, "IDRs sent directly: \(keyframes.sent)")
        for s in result.bots where s.role == .subscriber {
            // 2 feeds at 15 fps for ≥ 5 s held: 150; the first second of each is the join's.
            #expect(s.videoFramesOpened > 80 && s.videoFramesOpened == s.videoFramesReceived,
                    "\(s.display): \(s.videoFramesOpened) of \(s.videoFramesReceived) video frames opened")
            #expect(s.decryptFailuresTotal == 0 && s.feedsReceiving == 2, "\(s.display): \(s.decryptFailures), \(s.feedsReceiving) feeds")
            // Subscribers 0 and 2 decode: every frame from each feed's first IDR on (Janus asks
            // for one when the subscriber starts; it comes within one keyframe interval).
            if s.index % 2 == 0 {
                let decoded = try #require(s.videoPicturesDecoded, "\(s.display) did not decode")
                let beforeIDR = 2 * (VideoSettings.phone.keyframeInterval + 2)
                #expect(decoded > 0 && decoded >= s.videoFramesOpened - beforeIDR, "\(s.display): \(decoded) pictures of \(s.videoFramesOpened) frames")
                #expect(s.videoPictureSizes == ["640x360"], "\(s.display): \(s.videoPictureSizes ?? [])")
            } else {
                #expect(s.videoPicturesDecoded == nil)
            }
        }
    }

    // One publisher room, then a subscriber with the right key joins mid-call and one with the
    // wrong key. Janus asks the publisher for a keyframe when a subscriber starts (PLI); the
    // shared stream's next IDR answers it, so the late subscriber's first picture is at most a
    // keyframe interval away.
    @Test("mid-call join: Janus's PLIs are answered by the next IDR; a wrong key fails every video frame")
    func midCallJoinAndWrongKey() async throws {
        let room = try await Scene.createRoom(), ring = KeyRing(current: .random())
        let interval = VideoSettings.phone.keyframeMilliseconds
        let senders = Task { try await LoadRun(plan: try Self.plan(room: room, publishers: 1, subscribers: 0, ring: ring, seconds: 12)).run() }
        defer { senders.cancel() }
        try await Task.sleep(for: .seconds(3))
        let late = try await LoadRun(plan: try Self.plan(room: room, publishers: 0, subscribers: 1, ring: ring, seconds: 3)).run()
        let wrong = try await LoadRun(plan: try Self.plan(room: room, publishers: 0, subscribers: 1, ring: KeyRing(current: .random()), seconds: 3)).run()
        let published = try await senders.value

        let sub = try #require(late.bots.first)
        #expect(sub.videoFramesOpened > 20 && sub.decryptFailuresTotal == 0, "late subscriber: \(sub.videoFramesOpened) video frames, \(sub.decryptFailures)")
        let bad = try #require(wrong.bots.first)
        #expect(bad.videoFramesReceived > 20 && bad.videoFramesOpened == 0, "wrong key: \(bad.videoFramesOpened) of \(bad.videoFramesReceived) opened")
        #expect(bad.decryptFailures["no_key_opens", default: 0] == bad.framesReceived, "wrong key: \(bad.decryptFailures)")

        let k = try #require(LoadSummary(published).publishers.keyframes, "the publisher sent no video directly")
        print("load mid-call: \(k.requests) keyframe requests, \(k.answered) answered, \(k.sent) IDRs sent, slowest answer \(k.slowestAnswerMs) ms (interval \(interval) ms)")
        // One request per subscriber start at least; each answered by the IDR that followed it.
        #expect(k.requests >= 2 && k.answered >= 2, "requests \(k.requests), answered \(k.answered)")
        // The next IDR is at most one interval of frames away; frames are paced by the live
        // source, so only a stalled machine could make it wait much longer.
        #expect(k.slowestAnswerMs <= 2 * Double(interval), "slowest answer \(k.slowestAnswerMs) ms, interval \(interval) ms")
    }
}
}
