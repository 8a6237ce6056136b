import ArgumentParser
import Bot
import FrameCrypto
import Foundation
import Telemetry

struct Record: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Record every publisher in a room, decrypted, one file each.",
        discussion: """
            Subscribes to every publisher, present and future, on one multistream subscription. \
            Writes DIR/<feedId>-<userId>.opus per audio-only publisher (Ogg Opus, not transcoded), \
            DIR/<feedId>-<userId>.mkv per publisher with video (H.264 and Opus, not transcoded, in \
            sync), and DIR/manifest.json (per track: display, codec, first/last frame time, frames \
            opened and dropped by reason; joins and leaves). --mix FILE adds one Ogg Opus track of \
            the whole call with every publisher's audio mixed. Ctrl-C, SIGTERM or --duration finish the files cleanly: each is \
            read back, and manifest.json says what it holds (on_disk); a killed process still leaves files that play up to \
            their last second. A stop still busy 30 s after the signal (a server that never answers) ends anyway, but never \
            while files are being finished; a second signal changes nothing, a third ends it at once. Exit 0 only if nothing \
            was lost; 74 if a file holds less than was written to it, a track or the mix stopped being written, the mix \
            did not take in the end of a publisher's audio within 5 s (it may lack that audio's last seconds) or dropped \
            some of it as late, a file \
            cannot be read back, or a publisher in the room was not recorded for some of their time (a gap: the call went \
            on without the recorder) or at all (each is in the manifest's errors). Publishers present and no media from \
            any of them for --join-timeout (TURN, ICE, DTLS) ends the recording with 74 at once.
            """)

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var key: KeyOptions
    @OptionGroup var metricsOptions: MetricsOptions

    @Option(help: ArgumentHelp("Folder for the recordings and manifest.json.", valueName: "dir"))
    var out: String

    @Option(help: ArgumentHelp("Stop after this many seconds (default: until Ctrl-C).", valueName: "seconds"))
    var duration: Double?

    @Option(help: ArgumentHelp("End with an error (74) if publishers are in the room and no media from any of them reached the recorder for this many seconds.", valueName: "seconds"))
    var joinTimeout = 30.0

    @Option(help: ArgumentHelp("Also write every publisher's audio mixed into one Ogg Opus file.", valueName: "file"))
    var mix: String?

    @Option(help: ArgumentHelp("Display name the recorder joins with: \"<userId>:<Name>\".", valueName: "userId:Name"))
    var display = "0:sfubot recorder"

    @Option(help: ArgumentHelp(
        "Append the key(s) used to this file, one JSON line each ({call: room id, key, from, index}), for decrypting raw captures later (`mjr decrypt --key-log`). ECall: the call key (record has no key rotation; agent follows rotations). framecryptor, sframe: every key held, with its participant, index and format, and each one handed in (--key-feed) or ratcheted later. It holds keys in the clear: created 0600, refused if others can read it.",
        valueName: "file"))
    var keyLog: String?

    @Option(help: ArgumentHelp(SigningKeyOption.help, valueName: "file"))
    var signingKey: String?

    @Option(help: ArgumentHelp("The media socket's receive buffer, in bytes (default 4 MiB; past net.core.rmem_max only with CAP_NET_ADMIN). Packets the kernel drops when it is full and that no retransmission repairs are a loss (exit 74).", valueName: "bytes"))
    var receiveBuffer: Int?

    @Option(help: ArgumentHelp("How media is received: direct (the default: packets reordered and written in the thread that read them, no thread per stream; NACK negotiated) or webrtcbin (the fallback: its queue thread and a jitter-buffer thread per stream; docs/performance.md).", valueName: "webrtcbin|direct"))
    var receivePath = ReceivePathArgument.direct

    func validate() throws {
        try OptionCheck.seconds(duration, "--duration")
        try OptionCheck.seconds(joinTimeout, "--join-timeout")
        if let receiveBuffer, !(1024...(256 << 20)).contains(receiveBuffer) { throw ValidationError("--receive-buffer takes 1024 to 268435456 bytes") }
    }

    func run() async throws {
        SRTPPreload.run(connection.logger("sfubot.record"))
        let server = await metricsOptions.start(logger: connection.logger("sfubot.record"))
        defer { server?.stop() }
        do {
            let protection = try await key.protectionOffPool()
            let feed = try key.startFeed(protection, logger: connection.logger("sfubot.keys"))
            defer { withExtendedLifetime(feed) {} }
            KeyLogOption.logStart(try KeyLogOption.open(keyLog), protection, call: connection.room)
            var config = try connection.botConfig(display: display, protection: protection, label: "sfubot.record")
            config.joinTimeout = try OptionCheck.seconds(joinTimeout, "--join-timeout") ?? config.joinTimeout
            config.receiveBufferBytes = receiveBuffer
            config.receivePath = receivePath.path
            let signer = SigningKeyOption.load(signingKey)
            var recorder = Recorder(
                config: config, directory: URL(fileURLWithPath: out),
                duration: try OptionCheck.seconds(duration, "--duration"),
                mixFile: mix.map { URL(fileURLWithPath: $0) })
            recorder.signingKey = signer
            let configured = recorder
            let manifest = try await runCancellableOnSignals(grace: .seconds(30)) { () async throws(BotError) in try await configured.run() }
            for feed in manifest.feeds {
                print("\(URL(fileURLWithPath: out).appendingPathComponent(feed.file).path)  \(feed.display)  \(Counters.line(feed.frames, sending: false, encrypted: manifest.e2ee))")
            }
            for feed in manifest.unrecorded {
                print("(no file)  \(feed.display) \(feed.kind): no frame written  \(Counters.line(feed.frames, sending: false, encrypted: manifest.e2ee))")
            }
            let total = (manifest.feeds + manifest.unrecorded).map(\.frames).reduce(.zero, +)
            print(Counters.line(total, sending: false, encrypted: manifest.e2ee))
            if let mix = manifest.mix { print("\(mix)  every publisher's audio, mixed") }
            if manifest.lostSomething {
                for e in manifest.errors { FileHandle.standardError.write(Data("sfubot: lost: \(e.error)\n".utf8)) }
                throw CLIFailure("the recording is incomplete: \(manifest.errors.count) problem(s), listed in manifest.json's errors", code: .incomplete)
            }
        } catch let e as BotError {
            CLIFailure(e).exit()
        } catch let e as CLIFailure {
            e.exit()
        }
    }
}

enum ReceivePathArgument: String, ExpressibleByArgument, CaseIterable {
    case direct, webrtcbin
    var path: ReceivePath { self == .direct ? .direct : .webrtcbin }
}
