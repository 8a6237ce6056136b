import Bot
import Foundation
import Telemetry

/// `sfubot relay --to ws://…/{participant}`: each speaker's audio on a WebSocket of its own.
extension RelayCommand {
    func runSpeakers(_ to: String) async throws {
        try await relaying {
            let destination = try SpeakerStreamDestination(to)
            let audio = SpeakerStreamAudio(rawValue: wsAudio) ?? .pcm16k
            let protection = try key.protection()
            let feed = try key.startFeed(protection, logger: connection.logger("sfubot.keys"))
            defer { withExtendedLifetime(feed) {} }
            let config = try connection.botConfig(display: display, protection: protection, label: "sfubot.relay")
            var relay = SpeakerRelay(config: config, destination: destination, audio: audio, participant: participant,
                                     duration: try OptionCheck.seconds(duration, "--duration"))
            relay.listen = wsListen
            let configured = relay
            let report = try await runCancellableOnSignals(grace: .seconds(15)) { () async throws(BotError) in try await configured.run() }
            print("audio \(Counters.line(report.audio, sending: false, encrypted: protection.isEncrypted))")
            print("speaker streams to \(destination): speakers \(report.speakers), connections \(report.connections), "
                  + "\(audio.isPCM ? "PCM" : "Opus") messages \(report.sent) "
                  + "(\(report.seconds(audio).map { String(format: "%.1f s at %d Hz", $0, audio.sampleRate) } ?? "\(report.bytes) bytes")); "
                  + "dropped for a slow consumer: \(report.dropped), not sent while a connection was down: \(report.unsent); "
                  + "connection failures: \(report.failures); rejoins: \(report.rejoins)")
            if report.speakers == 0 {
                let who = participant.map { "participant \($0) never published audio" } ?? "nobody published audio"
                throw CLIFailure("\(who) in room \(connection.room): no speaker stream was opened", code: .noInput)
            }
            // Decoded speech a consumer never got: its transcript has a hole.
            // (Audio decoded before a first connection was up is its start, as for a destination.)
            if report.dropped > 0 || (report.failures > 0 && report.unsent > 0) {
                throw CLIFailure("the speaker streams are incomplete: \(report.dropped + report.unsent) audio messages were not delivered "
                                 + "(\(report.dropped) dropped for a slow consumer, \(report.unsent) while a connection was down)", code: .incomplete)
            }
        }
    }
}
