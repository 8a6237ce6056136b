import ArgumentParser
import Bot
import FrameCrypto
import Foundation

struct Play: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play an audio file or a test pattern into a room, sealed like an ECall phone.",
        discussion: """
            FILE: any audio GStreamer reads (wav, mp3, ogg, flac, ...), encoded Opus 48 kHz; it \
            starts once Janus reports the media path up, from its first sample, and the bot leaves \
            at its end unless --loop. --test-pattern: generated H.264 video (640x360, 10 fps) and \
            Opus audio with a white flash and a tick once a second, until Ctrl-C or --duration. \
            Ctrl-C leaves cleanly.
            """)

    @Argument(help: "The audio file to play (or use --test-pattern).")
    var file: String?

    @Flag(help: "Publish a generated picture and tone instead of a file.")
    var testPattern = false

    @Option(help: ArgumentHelp("Stop after this many seconds.", valueName: "seconds"))
    var duration: Double?

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var key: KeyOptions

    @Option(help: ArgumentHelp("Display name as ECall shows it: \"<userId>:<Name>\".", valueName: "userId:Name"))
    var display = "0:sfubot"

    @Flag(help: "Play the file again and again until stopped.")
    var loop = false

    func validate() throws {
        guard (file != nil) != testPattern else { throw ValidationError("give a FILE or --test-pattern") }
        if let duration, !(duration > 0) { throw ValidationError("--duration must be a positive number of seconds") }
    }

    func run() async throws {
        do {
            let config = try connection.botConfig(display: display, protection: try key.protection(), label: "sfubot.play")
            let player = Player(
                config: config, source: file.map { .file($0) } ?? .testPattern, loop: loop,
                duration: duration.map { .milliseconds(Int64($0 * 1000)) })
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
        var line = (encrypted ? "frames sealed and sent: \(r.framesSent), dropped (could not seal): \(r.frames.sealFailed)"
                              : "frames sent (no E2EE): \(r.framesSent)") + ", encoded during connection setup and discarded: \(setup)"
        if r.videoFrames.sealed > 0 || r.videoFrames.sealFailed > 0 {
            line += "\nvideo frames \(encrypted ? "sealed and sent" : "sent"): \(r.videoFramesSent), dropped (could not seal): \(r.videoFrames.sealFailed)"
        }
        return line
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
