import FrameCrypto
import Foundation
import Testing
@testable import Bot
import TestSupport

/// The stall watch alone, with no Janus: a media path up and nothing sealed is a stall after
/// `Player.stallTimeout`, said with the file's name; frames still coming are not.
@Suite struct PlayerStallTests {
    func player() throws -> Player {
        let config = BotConfig(janusURL: "ws://127.0.0.1:1", room: 1, display: "1:Stall", protection: .none,
                               pipelines: try PipelineLibrary(), logger: Scene.logger)
        return Player(config: config, source: .file("/tmp/stalled.wav"))
    }

    @Test func nothingSealedOnceUpIsAStallNamingTheFile() async throws {
        let player = try player()
        let up = Flag(), position = MediaTimes()
        up.set()
        position.mark(12.3)
        let (said, say) = AsyncStream.makeStream(of: BotError.self)
        let started = ContinuousClock.now
        let watch = player.watchForStall(up, position: position) { say.yield($0) }
        defer { watch.cancel() }
        var it = said.makeAsyncIterator()
        let error = try #require(await it.next())
        let took = ContinuousClock.now - started
        // Never before the timeout; the upper bound only catches a watch that does not fire (this
        // suite runs beside the media tests: on 2 busy cores 1.5 s of slack was once not enough,
        // and under ThreadSanitizer 10 s was not).
        print("stall watch: said after \(took) (timeout \(Player.stallTimeout))")
        #expect(took >= Player.stallTimeout && took < Player.stallTimeout + .seconds(60), "\(took)")
        #expect(error.category == .media)
        #expect(error.description.contains("/tmp/stalled.wav had not ended (stopped at 12.3 s)"), "\(error)")
    }

    @Test func framesStillComingAreNoStall() async throws {
        let player = try player()
        let up = Flag()
        up.set()
        let stalled = Flag()
        let watch = player.watchForStall(up, position: MediaTimes()) { _ in stalled.set() }
        defer { watch.cancel() }
        for _ in 0..<28 {
            player.stats.sealed()
            try await Task.sleep(for: .milliseconds(250))
        }
        #expect(!stalled.isSet, "7 s of frames every 250 ms")
    }
}
