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

        @OptionGroup var server: JanusOptions
        @Option(help: "Room id to create (default: Janus picks one).")
        var room: Int64?
        @OptionGroup var log: LogOptions

        func run() async throws {
            var log = log.logger("sfubot.room")
            // Its output is the id on stdout: quiet unless asked.
            if self.log.verbose == 0 { log.logLevel = .warning }
            do {
                let session = try await JanusSession.connect(url: server.janus, options: server.sessionOptions, logger: log)
                defer { Task { await session.close() } }
                let handle = try await session.attach(plugin: VideoRoom.plugin)
                let id = try await VideoRoom.createRoom(handle, room: room)
                await session.close()
                print(id)
            } catch {
                CLIFailure(.janus(error)).exit()
            }
        }
    }
}
