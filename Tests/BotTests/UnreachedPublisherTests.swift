import Foundation
import FrameCrypto
@testable import Janus
import JanusTesting
import Testing
@testable import Bot
import TestSupport

/// Issue 39, item 1: a publisher in the room whom the recorder never reached, or lost for a
/// while, is a loss (manifest `errors`, exit 74, a failed serve job), never a clean recording.
extension MediaScene {
@Suite struct UnreachedPublisherTests {
    static func publisher(_ id: Int64, _ display: String) -> RoomPublisher {
        RoomPublisher(FakeJanus.publisher(id: id, display: display))!
    }

    @Test("gaps that overlap a present publisher are losses; one never recorded is lost whole, with the gaps' causes; a wrong key's publisher is not")
    func lossesFromPresence() {
        let t0 = Date(timeIntervalSince1970: 1_000_000)
        var presence = RoomPresence()
        presence.seen([Self.publisher(1, "1:Ann"), Self.publisher(2, "2:Bob"), Self.publisher(3, "3:Cy")], at: t0)
        presence.seen([Self.publisher(4, "4:Di")], at: t0 + 50)
        presence.left(2, at: t0 + 5)
        // A rejoin at +30 finds Cy gone.
        presence.current([Self.publisher(1, "1:Ann"), Self.publisher(4, "4:Di")], at: t0 + 30)
        let gaps = [RecordingManifest.Gap(start: t0 + 10, end: t0 + 30, cause: "TURN refused"),
                    RecordingManifest.Gap(start: t0 + 40, end: t0 + 45, cause: "no media for 4.0 s")]
        let losses = presence.losses(gaps: gaps, recorded: [1, 2], reached: [4], failed: [], started: t0, ended: t0 + 60)
        let text = losses.map { "\($0.feedID ?? 0): \($0.error)" }
        // Ann: both gaps; Bob left before the first; Cy: nothing recorded, the first gap named; Di: reached (no key).
        #expect(losses.filter { $0.feedID == 1 }.count == 2, "\(text)")
        #expect(losses.contains { $0.feedID == 1 && $0.error.contains("from +10.0 s to +30.0 s (20.0 s: TURN refused)") }, "\(text)")
        #expect(!losses.contains { $0.feedID == 2 }, "\(text)")
        #expect(losses.contains { $0.feedID == 3 && $0.error.contains("nothing of theirs was recorded: TURN refused") }, "\(text)")
        #expect(!losses.contains { $0.feedID == 4 }, "\(text)")
        #expect(losses.count == 3, "\(text)")
        // No gap and no media: still a loss, saying so.
        let never = presence.losses(gaps: [], recorded: [], reached: [], failed: [2], started: t0, ended: t0 + 60)
        #expect(never.contains { $0.feedID == 1 && $0.error.contains("no media from them reached the recorder") } && !never.contains { $0.feedID == 2 })
    }

    @Test("wrong TURN password, relay only, a publisher present: the recorder ends after --join-timeout (not its duration) with a loss naming the publisher and TURN")
    func wrongTURNPasswordEndsAfterJoinTimeout() async throws {
        let clock = ContinuousClock(), began = clock.now
        let o = try await TURNTests.scene("unreached", auth: TURNTests.user, recordFor: .seconds(60),
                                          recorderICE: { try TURNTests.password([$0.url()], .relay, password: "wrong") },
                                          joinTimeout: .seconds(6)) { try TURNTests.password([$0.url()], .relay) }
        let took = clock.now - began
        TURNTests.report("unreached", o)
        print("unreached: errors \(o.manifest.errors.map(\.error)); took \(took)")
        let error = try #require(o.recorderError as? BotError, "the recorder failed: \(o.recorderError.map { "\($0)" } ?? "returned")")
        #expect(error.isLoss, "a loss (exit 74): \(error)")
        #expect("\(error)".contains("join timeout") && "\(error)".contains("4:Tone") && "\(error)".contains("TURN"), "\(error)")
        // 6 s after the publisher joined (1 s in), plus joining and finishing: far from 60 s.
        #expect(took < .seconds(35), "ended \(took) after the start")
        #expect(o.manifest.feeds.isEmpty && o.manifest.lostSomething)
        let lost = try #require(o.manifest.errors.first { $0.display == "4:Tone" }, "\(o.manifest.errors.map(\.error))")
        #expect(lost.error.contains("nothing of theirs was recorded") && lost.error.contains("TURN"), "\(lost.error)")
    }

    @Test("play with a wrong TURN password, relay only: fails after its join timeout with a clear error, not after the whole rejoin window")
    func playerWithWrongTURNPasswordFails() async throws {
        let dir = try Scene.tempDirectory("turn-player-fails")
        try await OwnJanus.with(port: 8221, in: dir, rtpPorts: MediaScene.TURNTests.janusRTP) { janus in
            try await OwnCoturn.with(port: 3478, relayPorts: MediaScene.TURNTests.relayPorts, auth: MediaScene.TURNTests.user, in: dir) { coturn in
                let room = try await Scene.createPermanentRoom(janus.url)
                var config = try Scene.config(room: room, display: "4:Tone", protection: .e2ee(KeyRing(current: .random())))
                config.janusURL = janus.url
                config.ice = try MediaScene.TURNTests.password([coturn.url()], .relay, password: "wrong")
                config.rejoinTimeout = .seconds(120)
                config.joinTimeout = .seconds(8)
                let player = Player(config: config, file: try await Audio.tone(440, seconds: 3, in: dir).path, loop: true)
                let clock = ContinuousClock(), began = clock.now
                let outcome: Result<Player.Report, BotError> = await {
                    do throws(BotError) { return .success(try await player.run()) } catch { return .failure(error) }
                }()
                let took = clock.now - began
                print("turn player-fails: \(outcome) after \(took)")
                guard case .failure(let error) = outcome else { Issue.record("the player returned: \(outcome)"); return }
                #expect("\(error)".contains("no media path within 8 s") && "\(error)".contains("TURN"), "\(error)")
                // 8 s, then the attempt under way ends (backoff doubling from 0.5 s): far from 120 s.
                #expect(took < .seconds(30), "failed after \(took)")
            }
        }
    }
}
}
