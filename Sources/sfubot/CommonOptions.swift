import ArgumentParser
import Bot
import FrameCrypto
import Foundation
import Janus
import Logging

/// Where the bot connects; shared by every command that joins a room.
struct ConnectionOptions: ParsableArguments {
    @Option(help: "Janus WebSocket URL.")
    var janus = "ws://127.0.0.1:8188"

    @Option(help: "VideoRoom room id.")
    var room: Int64

    @Option(help: ArgumentHelp("Janus API secret, if the server sets one.", valueName: "secret"))
    var apiSecret: String?

    @Option(help: ArgumentHelp("Janus auth token, if the server requires one.", valueName: "token"))
    var token: String?

    @Option(help: ArgumentHelp("Folder of pipeline descriptions (default: ./pipelines, $SFUBOT_PIPELINES, or the checkout's).", valueName: "dir"))
    var pipelines: String?

    @Flag(name: .shortAndLong, help: "Log more (-v: debug, -vv: trace).")
    var verbose: Int

    func logger(_ label: String) -> Logger {
        LoggingSystem.bootstrapOnce()
        var l = Logger(label: label)
        l.logLevel = verbose >= 2 ? .trace : verbose == 1 ? .debug : .info
        return l
    }

    func botConfig(display: String, protection: FrameProtection, label: String) throws -> BotConfig {
        BotConfig(
            janusURL: janus, room: room, display: display, protection: protection,
            janus: JanusSession.Options(apiSecret: apiSecret, token: token),
            pipelines: try PipelineLibrary(directory: pipelines), logger: logger(label))
    }
}

/// The call key, or explicitly none.
struct KeyOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Call key as 64 hex characters.", valueName: "hex"))
    var keyHex: String?

    @Option(help: ArgumentHelp("File holding the call key: 32 raw bytes or 64 hex characters.", valueName: "path"))
    var keyFile: String?

    @Flag(help: "Send and receive media without ECall's frame encryption.")
    var noE2ee = false

    func validate() throws {
        let given = [keyHex != nil, keyFile != nil, noE2ee].filter { $0 }.count
        guard given == 1 else { throw ValidationError("give exactly one of --key-hex, --key-file or --no-e2ee") }
    }

    func protection() throws -> FrameProtection {
        if noE2ee { return .none }
        do {
            let key = try keyHex.map { hex throws(KeyError) in try CallKey(hex: hex) } ?? CallKey(contentsOfFile: keyFile!)
            return .e2ee(KeyRing(current: key))
        } catch {
            throw CLIFailure(String(describing: error), code: .badKey)
        }
    }
}

extension LoggingSystem {
    private static let once: Void = LoggingSystem.bootstrap { ComponentLogHandler(label: $0) }
    static func bootstrapOnce() { _ = once }
}
