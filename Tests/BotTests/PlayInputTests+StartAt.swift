import Bot
import FrameCrypto
import Foundation
import Testing
import TestSupport

/// A playback taken over by another instance starts where the one before had reached in its
/// file (`Player.startAt`, the position the store carries: ClusterStoreTests+Handover): the
/// seek itself, on one player against Janus.
extension MediaScene.PlayInputTests {
    @Test("a player started at 7 s of a 10 s file plays from there: about 3 s of frames sent, not 10; it ends at the file's end, its position past 9.5 s")
    func startsWhereItWas() async throws {
        let dir = try Scene.tempDirectory("start-at")
        let tone = try await Audio.tone(440, seconds: 10, in: dir)
        let room = try await Scene.createRoom()
        var player = Player(config: try Scene.config(room: room, display: "4:StartAt", protection: .e2ee(KeyRing(current: .random()))),
                            source: .file(tone.path), duration: .seconds(20))
        player.startAt = 7
        let started = ContinuousClock.now
        let report = try await player.run()
        let took = ContinuousClock.now - started
        print("player from 7 s of 10 s: \(report.framesSent) frames sent in \(took), last position \(player.played.seconds.map { String(format: "%.2f", $0) } ?? "none")")
        #expect((120...170).contains(report.framesSent), "3 s of 20 ms frames from 7 s on (all 10 s would be 500): \(report.framesSent)")
        #expect((player.played.seconds ?? 0) >= 9.5, "\(String(describing: player.played.seconds))")
        #expect(report.rejoins == 0 && took < .seconds(8), "ended at the file's end: \(took)")
    }
}
