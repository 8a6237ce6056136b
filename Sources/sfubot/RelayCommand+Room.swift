import ArgumentParser
import Bot
import FrameCrypto
import Foundation
import Telemetry

/// `sfubot relay --to-room N`: one participant of --room, opened with its key, published into
/// room N as a participant of its own, every frame sealed again with N's key and frame format,
/// never re-encoded.
extension RelayCommand {
    func runToRoom(_ room: Int64, participant: String) async throws {
        SRTPPreload.run(connection.logger("sfubot.relay"))
        let server = await metricsOptions.start(logger: connection.logger("sfubot.relay"))
        defer { server?.stop() }
        do {
            let opening = try await key.protectionOffPool()
            let feed = try key.startFeed(opening, logger: connection.logger("sfubot.keys"))
            defer { withExtendedLifetime(feed) {} }
            let from = try connection.botConfig(display: display, protection: opening, label: "sfubot.relay")
            var to = from
            to.room = room
            if let toJanus { to.janusURL = toJanus }
            to.protection = try await toKeyOptions().sendingProtectionOffPool(display: display)
            let input = RoomInput(config: from, participant: participant)
            let player = Player(config: to, source: .room(input), duration: try OptionCheck.seconds(duration, "--duration"))
            let report = try await runCancellableOnSignals(grace: .seconds(15)) { () async throws(BotError) in try await player.run() }
            let side = input.report
            print("audio \(Counters.line(side?.audio ?? .zero, sending: false, encrypted: opening.isEncrypted))")
            print("video \(Counters.line(side?.video ?? .zero, sending: false, encrypted: opening.isEncrypted))")
            print(Counters.sent(report, encrypted: to.protection.isEncrypted))
            print("bridged participant \(participant) of room \(connection.room) into room \(room) as publisher \(report.publisherID); "
                  + "rejoins: room \(connection.room) \(side?.rejoins ?? 0), room \(room) \(report.rejoins)")
            if side?.participantSeen != true {
                throw CLIFailure("participant \(participant) never published in room \(connection.room): nothing was bridged", code: .noInput)
            }
        } catch let e as BotError {
            CLIFailure(e).exit()
        } catch let e as CLIFailure {
            e.exit()
        }
    }

    /// The other room's key options, read as `--key-hex`, `--key-file`, `--frame-format` and
    /// `--ratchet-salt` are (its other format options at their defaults).
    func toKeyOptions() throws -> KeyOptions {
        var args: [String] = []
        if let toKeyHex { args += ["--key-hex", toKeyHex] }
        if let toKeyFile { args += ["--key-file", toKeyFile] }
        args += ["--frame-format", toFrameFormat]
        if let toRatchetSalt { args += ["--ratchet-salt", toRatchetSalt] }
        do { return try KeyOptions.parse(args) } catch { throw ValidationError("--to-key-hex/--to-key-file/--to-frame-format/--to-ratchet-salt: \(KeyOptions.message(for: error))") }
    }
}
