import ArgumentParser
import Bot
import FrameCrypto
import Foundation
import Telemetry

/// `sfubot relay --to-room N`: one participant of --room, opened with its key, published into
/// room N as a participant of its own, every frame sealed again with N's key and frame format,
/// never re-encoded.
extension RelayCommand {
    func runToRoom(_ room: Int64, participant: String?) async throws {
        try await relaying {
            let opening = try await key.protectionOffPool()
            let feed = try key.startFeed(opening, logger: connection.logger("sfubot.keys"))
            defer { withExtendedLifetime(feed) {} }
            let from = try connection.botConfig(display: display, protection: opening, label: "sfubot.relay")
            var to = from
            to.room = room
            if let toJanus { to.janusURL = toJanus }
            let toKey = try toKeyOptions()
            guard let participant else { return try await bridgeEveryone(from: from, to: to, key: toKey) }
            to.protection = try await toKey.sendingProtectionOffPool(display: display)
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
        }
    }

    /// Everyone publishing audio, each sealed as themselves in the other room (their display's
    /// sender id), until --duration or a signal.
    private func bridgeEveryone(from: BotConfig, to: BotConfig, key toKey: KeyOptions) async throws {
        let bridge = Bridge(from: from, to: to, duration: try OptionCheck.seconds(duration, "--duration")) { display throws(BotError) in
            do { return try await toKey.sendingProtectionOffPool(display: display) } catch { throw .output("\(KeyOptions.message(for: error))") }
        }
        let report = try await runCancellableOnSignals(grace: .seconds(20)) { () async throws(BotError) in try await bridge.run() }
        for b in report.bridged {
            let opened = b.opened.map { "opened audio \($0.audio.opened), video \($0.video.opened)" } ?? "opened nothing"
            let sent = b.sent.map { "sealed and sent audio \($0.framesSent), video \($0.videoFramesSent) as publisher \($0.publisherID)" } ?? "not published"
            print("bridged participant \(b.participant) '\(b.display)' of room \(connection.room) into room \(to.room): \(opened); \(sent)"
                  + (b.error.map { "; failed: \($0)" } ?? ""))
        }
        print("bridged \(report.bridged.count) participant(s); rejoins: \(report.rejoins)")
        if report.bridged.isEmpty { throw CLIFailure("nobody published audio in room \(connection.room): nothing was bridged", code: .noInput) }
        if report.bridged.contains(where: { $0.error != nil }) { throw CLIFailure("a participant could not be bridged (above)", code: .incomplete) }
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
