import ArgumentParser
import Bot
import FrameCrypto
import Foundation

struct Play: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play an audio file into a room, sealed like an ECall phone.",
        discussion: """
            Decodes any audio GStreamer reads (wav, mp3, ogg, flac, ...), encodes Opus 48 kHz and \
            publishes it. Leaves the room at the end of the file unless --loop. Ctrl-C leaves cleanly.
            """)

    @Argument(help: "The audio file to play.")
    var file: String

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var key: KeyOptions

    @Option(help: ArgumentHelp("Display name as ECall shows it: \"<userId>:<Name>\".", valueName: "userId:Name"))
    var display = "0:sfubot"

    @Flag(help: "Play the file again and again until stopped.")
    var loop = false

    func run() async throws {
        do {
            let config = try connection.botConfig(display: display, protection: try key.protection(), label: "sfubot.play")
            let player = Player(config: config, file: file, loop: loop)
            let report = try await runCancellableOnSignals { () async throws(BotError) in try await player.run() }
            print(Counters.sent(report, encrypted: config.protection.isEncrypted))
        } catch let e as BotError {
            CLIFailure(e).exit()
        } catch let e as CLIFailure {
            e.exit()
        }
    }
}

enum Counters {
    static func sent(_ r: Player.Report, encrypted: Bool) -> String {
        let setup = r.frames.sealed - r.framesSent
        return (encrypted ? "frames sealed and sent: \(r.framesSent), dropped (could not seal): \(r.frames.sealFailed)"
                          : "frames sent (no E2EE): \(r.framesSent)") + ", encoded during connection setup and discarded: \(setup)"
    }

    /// The counters printed on exit.
    static func line(_ s: FrameStats.Snapshot, sending: Bool, encrypted: Bool) -> String {
        if sending {
            return encrypted ? "frames sealed and sent: \(s.sealed), dropped (could not seal): \(s.sealFailed)"
                             : "frames sent (no E2EE): \(s.sealed)"
        }
        let reasons = DropReason.allCases.map { "\($0.rawValue)=\(s.dropped[$0.rawValue] ?? 0)" }.joined(separator: " ")
        return "frames received: \(s.received), opened: \(s.opened), dropped: \(s.droppedTotal) (\(reasons))"
    }
}
