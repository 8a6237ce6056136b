import ArgumentParser
import Bot
import Foundation
import Janus
import Logging

struct Room: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage VideoRoom rooms (as the ECall caller's app does).",
        subcommands: [Create.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a room with ECall's parameters (H.264, Opus, 200 publishers, 128 kbit/s cap); prints its id.")

        @Option(help: "Janus WebSocket URL.")
        var janus = "ws://127.0.0.1:8188"
        @Option(help: "Room id to create (default: Janus picks one).")
        var room: Int64?
        @Option(help: ArgumentHelp("Janus API secret, if the server sets one.", valueName: "secret"))
        var apiSecret: String?

        func validate() throws {
            try OptionCheck.url(janus, "--janus")
        }

        func run() async throws {
            LoggingSystem.bootstrapOnce()
            var log = Logger(label: "sfubot.room")
            log.logLevel = .warning
            do {
                let session = try await JanusSession.connect(url: janus, options: .init(apiSecret: apiSecret), logger: log)
                defer { Task { await session.close() } }
                let handle = try await session.attach(plugin: VideoRoom.plugin)
                let id = try await VideoRoom.createRoom(handle, room: room)
                await session.close()
                print(id)
            } catch let e as JanusError {
                CLIFailure(.janus(e)).exit()
            }
        }
    }
}
