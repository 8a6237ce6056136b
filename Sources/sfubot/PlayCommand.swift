import ArgumentParser
import Bot
import FrameCrypto
import Foundation
import Telemetry

struct Play: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play an audio file or a test pattern into a room, sealed like an ECall phone.",
        discussion: """
            FILE: any audio GStreamer reads (wav, mp3, ogg, flac, ...), encoded Opus 48 kHz, or a \
            video file with audio (mp4, mkv, webm, ...). H.264 that ECall rooms take as it is \
            (constrained baseline or constrained high, level 3.1 at most) is sent without \
            re-encoding; other video is transcoded once to ECall's envelope (H.264 constrained \
            baseline, within --max-width x --max-height, at most --max-fps). It \
            starts once Janus reports the media path up, from its first sample, and the bot leaves \
            at its end unless --loop. --test-pattern: generated H.264 video (640x360, 10 fps) and \
            Opus audio with a white flash and a tick once a second, until Ctrl-C or --duration. \
            Ctrl-C leaves cleanly.
            """)

    @Argument(help: "The audio or video file to play (or use --test-pattern).")
    var file: String?

    @Flag(help: "Publish a generated picture and tone instead of a file.")
    var testPattern = false

    @Option(help: ArgumentHelp("Play this many seconds from the first publish; whatever happens (joining, rejoining, stalled) the bot is gone this + 2 s after it started.", valueName: "seconds"))
    var duration: Double?

    @Flag(help: "Video files: re-encode to the envelope even H.264 the room would take as it is.")
    var transcode = false
    @Option(help: "Video files: largest width sent (ECall phones: 854).")
    var maxWidth = 854
    @Option(help: "Video files: largest height sent (ECall phones: 480).")
    var maxHeight = 480
    @Option(help: "Video files: highest frame rate sent (ECall phones: 10).")
    var maxFps = 10
    @Option(help: "Video files: H.264 bitrate in kbit/s (rooms cap the total at 128).")
    var videoKbps = 96

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var key: KeyOptions
    @OptionGroup var metricsOptions: MetricsOptions

    @Option(help: ArgumentHelp("Display name as ECall shows it: \"<userId>:<Name>\". With --key-map the userId is the participant id whose newest key seals the media.", valueName: "userId:Name"))
    var display = "0:sfubot"

    @Flag(help: "Play the file again and again until stopped.")
    var loop = false

    func validate() throws {
        guard (file != nil) != testPattern else { throw ValidationError("give a FILE or --test-pattern") }
        try OptionCheck.seconds(duration, "--duration")
        // Upper bounds: what x264enc and caps take (8K, 120 fps, 100 Mbit/s).
        try OptionCheck.count(maxWidth, "--max-width", in: 16...7680)
        try OptionCheck.count(maxHeight, "--max-height", in: 16...4320)
        try OptionCheck.count(maxFps, "--max-fps", in: 1...120)
        try OptionCheck.count(videoKbps, "--video-kbps", in: 16...100_000)
    }

    func run() async throws {
        SRTPPreload.run(connection.logger("sfubot.play"))
        let server = await metricsOptions.start(logger: connection.logger("sfubot.play"))
        defer { server?.stop() }
        do {
            let protection = try await key.sendingProtectionOffPool(display: display)
            let feed = try key.startFeed(protection, logger: connection.logger("sfubot.keys"))
            defer { withExtendedLifetime(feed) {} }
            let config = try connection.botConfig(display: display, protection: protection, label: "sfubot.play")
            var player = Player(
                config: config, source: file.map { .file($0) } ?? .testPattern, loop: loop,
                duration: try OptionCheck.seconds(duration, "--duration"))
            player.envelope.maxWidth = maxWidth
            player.envelope.maxHeight = maxHeight
            player.envelope.maxFPS = maxFps
            player.envelope.kilobitsPerSecond = videoKbps
            player.transcodeVideo = transcode
            let configured = player
            // Nothing to save: leaving the room is all a stop has to do.
            let report = try await runCancellableOnSignals(grace: .seconds(15)) { () async throws(BotError) in try await configured.run() }
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
