import Bot
import Foundation
import Telemetry

/// `sfubot relay --from URL`: a live source into the room as one publisher (Player's `.live`).
extension RelayCommand {
    func runFrom(_ from: String) async throws {
        try await relaying {
            let address = try LiveSourceAddress(from)
            let protection = try await key.sendingProtectionOffPool(display: display)
            let feed = try key.startFeed(protection, logger: connection.logger("sfubot.keys"))
            defer { withExtendedLifetime(feed) {} }
            let config = try connection.botConfig(display: display, protection: protection, label: "sfubot.relay")
            let player = Player(config: config, source: .live(address), duration: try OptionCheck.seconds(duration, "--duration"))
            let report = try await runCancellableOnSignals(grace: .seconds(15)) { () async throws(BotError) in try await player.run() }
            print(Counters.sent(report, encrypted: protection.isEncrypted))
            if let c = player.liveSource?.counts {
                let video = c.passthrough.map { $0 ? "video sent as the source sent it" : "video encoded once" } ?? "no video"
                print("source \(address): connected \(c.connections) times, dropped \(c.drops) times, away \(String(format: "%.1f", c.awaySeconds)) s "
                      + "(longest gap \(String(format: "%.1f", c.longestGap)) s); \(video); frames handed to the publisher: audio \(c.audioFrames), "
                      + "video \(c.videoFrames), with no publisher to take them: \(c.unsent); publisher \(report.publisherID), rejoins: \(report.rejoins)")
            }
        }
    }
}
