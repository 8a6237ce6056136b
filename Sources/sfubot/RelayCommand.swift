import ArgumentParser
import Bot
import Foundation
import Telemetry

struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Relay a room's participants, decrypted, to a live destination (RTMP, SRT, RTP or SRTP, HLS, one WebSocket per speaker) or another room, or a live source into it, sealed.",
        discussion: """
            Joins the room, waits for --participant (a feed id, or the user id of an \
            ECall display "<userId>:<Name>"), subscribes to it, opens every frame with the call's key and \
            sends what opened to --to: rtmp://host[:port]/app/stream (FLV: H.264 as sent, Opus as AAC), \
            srt://host:port (MPEG-TS, the same), rtp://host:port (plain RTP as Janus's rtp_forward: \
            Opus pt 111 to port, H.264 pt 96 to port+2; srtp://host:port?key=BASE64 the same as SRTP with a 30-byte SDES key), hls:DIR (a playlist and MPEG-TS segments in a \
            folder only you can read, files 0600). Nothing is re-encoded but Opus→AAC. A frame that \
            does not open is dropped and counted, never sent. A destination that is down or refuses is tried \
            again with backoff (0.5 s doubling to 10 s) while the relay stays in the call; the log says so. \
            The participant leaving and coming back goes on in the same stream. Ctrl-C, SIGTERM or \
            --duration end the stream cleanly and print the counters. docs/relay.md has the limits.

            Without --participant, --to rtmp://…, srt://… or hls:DIR relays the whole room, encoded once: \
            --layout grid (default: everyone publishing video in a grid, each picture keeping its aspect ratio on \
            black) or --layout speaker (the active speaker's picture fills the frame: the loudest decoded audio, \
            another taking over after being louder for 1 s), everyone's audio mixed; H.264 constrained baseline \
            (a keyframe every 2 s) at --size (default 1280x720) and 25 fps, AAC. Joins, leaves and gaps change the \
            picture, never the stream; nothing is sent before a first frame opened.

            With --to ws://host:port/path/{participant} (or wss://): each speaker's audio, live, for transcription: \
            one WebSocket connection per participant publishing audio (or only --participant), a JSON "start" \
            message, then binary PCM (s16le mono, 16 kHz, or --ws-audio 48k|opus), "muted"/"speaking" messages, and \
            "left" when they leave. A consumer that is down or slow never holds up the call: what it missed is \
            counted, and the exit status is 74.

            With --to-room N: --participant (default: everyone publishing audio, each as a publisher of their own, \
            named as here) is published into room N (on --to-janus, \
            default the same Janus) as a participant of its own, every frame opened with this room's key and \
            sealed again with --to-key-hex/--to-key-file in --to-frame-format (ecall, framecryptor with \
            --to-ratchet-salt, sframe), \
            Opus and H.264 never re-encoded. The participant leaving and coming back goes on in the same publisher.

            With --from rtmp://…|srt://…|rtp://… instead (no --participant): reads the live source and joins \
            as one publisher, every frame sealed as a phone seals it; H.264 the room takes is sent as it is, \
            other H.264 encoded once; audio encoded to Opus. A source that drops is tried again with backoff \
            (0.5 s doubling to 5 s) while the publisher stays in the room sending nothing, and goes on in it.
            """)

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var key: KeyOptions
    @OptionGroup var metricsOptions: MetricsOptions

    @Option(help: ArgumentHelp("Where the media goes: rtmp://host[:port]/app/stream, rtmps://…, srt://host:port, rtp://host:port, srtp://host:port?key=BASE64, hls:DIR, or ws://host:port/path/{participant} (each speaker's audio).", valueName: "url"))
    var to: String?

    @Option(name: .customLong("tls-ca-file"), help: ArgumentHelp("rtmps:// (--to or --from): verify the server's certificate against the PEM CAs in this file, in place of the system's.", valueName: "path"))
    var tlsCAFile: String?

    @Option(help: ArgumentHelp("A live source to publish into the room, sealed: rtmp://host[:port]/app/stream, rtmps://…, srt://host:port or rtp://host:port.", valueName: "url"))
    var from: String?

    @Option(help: ArgumentHelp("With --to, the participant to relay: their feed id, or the user id of their display (\"<userId>:<Name>\") (default: the whole room, composed: --layout); with --to ws://…, only them (default: everyone).", valueName: "id"))
    var participant: String?

    @Option(help: ArgumentHelp("Without --participant, to rtmp/srt/hls: grid (everyone publishing video) or speaker (the active speaker fills the frame); the audio of everyone mixed.", valueName: "grid|speaker"))
    var layout: String?

    @Option(help: ArgumentHelp("With the whole room (no --participant): the picture's size (default 1280x720; even numbers up to 1920x1080).", valueName: "WxH"))
    var size: String?

    @Option(name: .customLong("ws-audio"), help: ArgumentHelp("With --to ws://…: PCM at 16k (speech recognisers) or 48k (Opus's own rate), or opus (the packets as sent, one per message).", valueName: "16k|48k|opus"))
    var wsAudio = "16k"

    @Flag(name: .customLong("ws-listen"), help: "With --to ws://host:port/path/{participant}: listen there for consumers to connect (one that cannot accept connections), rather than connecting to them; the path up to {participant} lists the speakers.")
    var wsListen = false

    @Option(name: .customLong("to-room"), help: ArgumentHelp("Bridge --participant into this room (see --to-key-hex).", valueName: "id"))
    var toRoom: Int64?

    @Option(name: .customLong("to-janus"), help: ArgumentHelp("With --to-room: that room's Janus WebSocket URL (default: --janus).", valueName: "url"))
    var toJanus: String?

    @Option(name: .customLong("to-key-hex"), help: ArgumentHelp("With --to-room: that room's key as 64 hex characters.", valueName: "hex"))
    var toKeyHex: String?

    @Option(name: .customLong("to-key-file"), help: ArgumentHelp("With --to-room: a file holding that room's key.", valueName: "path"))
    var toKeyFile: String?

    @Option(name: .customLong("to-frame-format"), help: ArgumentHelp("With --to-room: that room's frame format, ecall, framecryptor or sframe (its other options at their defaults).", valueName: "format"))
    var toFrameFormat = "ecall"

    @Option(name: .customLong("to-ratchet-salt"), help: ArgumentHelp("With --to-frame-format framecryptor: that room's ratchet salt (as --ratchet-salt).", valueName: "text"))
    var toRatchetSalt: String?

    @Option(help: ArgumentHelp("Stop after this many seconds (default: until Ctrl-C).", valueName: "seconds"))
    var duration: Double?

    @Option(help: ArgumentHelp("Display name the relay joins with: \"<userId>:<Name>\".", valueName: "userId:Name"))
    var display = "0:sfubot relay"

    func validate() throws {
        try OptionCheck.seconds(duration, "--duration")
        if let tlsCAFile { try TLSTrust.check(tlsCAFile, option: "--tls-ca-file") }
        guard [to != nil, from != nil, toRoom != nil].filter({ $0 }).count == 1 else {
            throw ValidationError("give exactly one of --to URL (out of the room), --from URL (into it) or --to-room ID (into another room)")
        }
        try validateComposite()
        if toRoom != nil {
            if let participant, participant.isEmpty { throw ValidationError("--participant: give a feed id or a user id (or leave it out: everyone)") }
            guard toKeyHex != nil || toKeyFile != nil else { throw ValidationError("--to-room: give the other room's key, --to-key-hex or --to-key-file") }
            _ = try toKeyOptions()
            if let toJanus { try OptionCheck.url(toJanus, "--to-janus") }
            return
        }
        if let from {
            do { _ = try LiveSourceAddress(from) } catch { throw ValidationError("--from: \(error)") }
            guard participant == nil else { throw ValidationError("--participant goes with --to; --from publishes a participant of its own") }
            return
        }
        guard SpeakerStreamAudio(rawValue: wsAudio) != nil else { throw ValidationError("--ws-audio: give 16k, 48k or opus") }
        if let to, to.lowercased().hasPrefix("ws://") || to.lowercased().hasPrefix("wss://") {
            let destination: SpeakerStreamDestination
            do { destination = try SpeakerStreamDestination(to) } catch { throw ValidationError("\(error)") }
            if wsListen, destination.listenAddress == nil { throw ValidationError("--ws-listen: give ws://host:port/path/{participant} (no wss://: sfubot has no certificate to serve)") }
            return
        }
        if wsListen { throw ValidationError("--ws-listen goes with --to ws://host:port/path/{participant}") }
        let destination: RelayDestination
        do { destination = try RelayDestination(to ?? "") } catch { throw ValidationError("\(error)") }
        // No --participant: the whole room, composed (rtmp, srt, hls).
        if participant == nil, destination.kind == .rtp || destination.kind == .srtp {
            throw ValidationError("--to \(destination.kind.rawValue)://… sends one participant as they sent it: give --participant (the whole room, composed, goes to rtmp://, srt:// or hls:)")
        }
        if let participant, participant.isEmpty { throw ValidationError("--participant: give a feed id or a user id (or leave it out: the whole room)") }
    }

    func run() async throws {
        if let from { return try await runFrom(from) }
        if let toRoom { return try await runToRoom(toRoom, participant: participant) }
        if let to, (try? SpeakerStreamDestination(to)) != nil { return try await runSpeakers(to) }
        guard let participant else { return try await runComposite(to ?? "") }
        let to = to ?? ""
        try await relayingOut(to) { destination, config in
            let relay = Relay(config: config, destination: destination, participant: participant,
                              duration: try OptionCheck.seconds(duration, "--duration"))
            let report = try await runCancellableOnSignals(grace: .seconds(15)) { () async throws(BotError) in try await relay.run() }
            let encrypted = config.protection.isEncrypted
            print("audio \(Counters.line(report.audio, sending: false, encrypted: encrypted))")
            print("video \(Counters.line(report.video, sending: false, encrypted: encrypted))")
            // Handed to the output graph: an output that failed later lost what it still held.
            print("relayed to \(destination) (handed to the output): audio frames \(report.audioSent), video frames \(report.videoSent); "
                  + "not sent while the destination was down: \(report.unsent), video before the output's first keyframe: \(report.beforeKeyFrame); "
                  + "outputs started: \(report.attempts), destination failures: \(report.failures); "
                  + "dropped in the output (the destination too slow): \(report.droppedInOutput); rejoins: \(report.rejoins)")
            if let d = report.outputDelay {
                print(String(format: "output delay (handed to the output graph → its network sink): p50 %.0f ms, p95 %.0f ms over %d buffers", d.p50 * 1000, d.p95 * 1000, d.count))
            }
            if !report.participantSeen {
                throw CLIFailure("participant \(participant) never published in room \(connection.room): nothing was relayed", code: .noInput)
            }
            // Opened frames the destination never got: the stream has a hole.
            if let lost = report.incomplete { throw CLIFailure("the relay to \(destination) is incomplete: \(lost)", code: .incomplete) }
        }
    }

    /// Out of the room to `to` (one participant or the composite): the destination, the room's
    /// keys (a key feed for as long as `body` runs) and its config.
    func relayingOut(_ to: String, _ body: (RelayDestination, BotConfig) async throws -> Void) async throws {
        try await relaying {
            let destination = try RelayDestination(to)
            // HLS writes the call, decrypted, to disk: every file this process makes is 0600.
            if destination.kind == .hls { umask(0o077) }
            let protection = try key.protection()
            let feed = try key.startFeed(protection, logger: connection.logger("sfubot.keys"))
            defer { withExtendedLifetime(feed) {} }
            try await body(destination, try connection.botConfig(display: display, protection: protection, label: "sfubot.relay"))
        }
    }

    /// Around every direction of the relay: libsrtp preloaded, the metrics server for the run,
    /// and a failure as its exit code.
    func relaying(_ body: () async throws -> Void) async throws {
        SRTPPreload.run(connection.logger("sfubot.relay"))
        let server = await metricsOptions.start(logger: connection.logger("sfubot.relay"))
        defer { server?.stop() }
        do {
            if let tlsCAFile { try TLSTrust.trustOnly(tlsCAFile, option: "--tls-ca-file") }
            try await body()
        } catch let e as BotError {
            CLIFailure(e).exit()
        } catch let e as CLIFailure {
            e.exit()
        }
    }
}
