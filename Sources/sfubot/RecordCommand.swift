import ArgumentParser
import Bot
import FrameCrypto
import Foundation

struct Record: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Record every publisher in a room, decrypted, one file each.",
        discussion: """
            Subscribes to every publisher, present and future, on one multistream subscription. \
            Writes DIR/<feedId>-<userId>.opus per publisher (Ogg Opus, not transcoded) and \
            DIR/manifest.json (per feed: display, first/last frame time, frames opened and dropped \
            by reason). Ctrl-C, SIGTERM or --duration finish the files cleanly; a killed process \
            still leaves files that play up to their last half second.
            """)

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var key: KeyOptions

    @Option(help: ArgumentHelp("Folder for the recordings and manifest.json.", valueName: "dir"))
    var out: String

    @Option(help: ArgumentHelp("Stop after this many seconds (default: until Ctrl-C).", valueName: "seconds"))
    var duration: Double?

    @Option(help: ArgumentHelp("Display name the recorder joins with: \"<userId>:<Name>\".", valueName: "userId:Name"))
    var display = "0:sfubot recorder"

    func validate() throws {
        if let duration, !(duration > 0) { throw ValidationError("--duration must be a positive number of seconds") }
    }

    func run() async throws {
        do {
            let config = try connection.botConfig(display: display, protection: try key.protection(), label: "sfubot.record")
            let recorder = Recorder(
                config: config, directory: URL(fileURLWithPath: out),
                duration: duration.map { .milliseconds(Int64($0 * 1000)) })
            let manifest = try await runCancellableOnSignals { () async throws(BotError) in try await recorder.run() }
            for feed in manifest.feeds {
                print("\(URL(fileURLWithPath: out).appendingPathComponent(feed.file).path)  \(feed.display)  \(Counters.line(feed.frames, sending: false, encrypted: manifest.e2ee))")
            }
            let total = manifest.feeds.map(\.frames).reduce(.zero, +)
            print(Counters.line(total, sending: false, encrypted: manifest.e2ee))
        } catch let e as BotError {
            CLIFailure(e).exit()
        } catch let e as CLIFailure {
            e.exit()
        }
    }
}
