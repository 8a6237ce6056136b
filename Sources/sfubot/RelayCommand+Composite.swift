import ArgumentParser
import Bot
import Foundation
import Telemetry

/// `sfubot relay --to rtmp|srt|hls` without `--participant`: the whole room in one picture
/// (`--layout grid|speaker`, `--size`), everyone's audio mixed, encoded once.
extension RelayCommand {
    /// `--layout` and `--size` only where a composite is made: --to rtmp://, srt:// or hls:
    /// without --participant.
    func validateComposite() throws {
        guard layout != nil || size != nil else { return }
        let option = layout != nil ? "--layout" : "--size"
        if participant != nil {
            throw ValidationError("\(option) composes the whole room; with --participant one participant is relayed as they sent it (leave out --participant, or \(option))")
        }
        let composable = (try? RelayDestination(to ?? "")).map { [RelayDestination.Kind.rtmp, .srt, .hls].contains($0.kind) } ?? false
        guard from == nil, toRoom == nil, composable else {
            throw ValidationError("\(option) goes with --to rtmp://…, srt://… or hls:DIR (the whole room, composed); rtp://, srtp://, ws://, --from and --to-room carry each participant as sent")
        }
        if let layout, CompositeLayout(rawValue: layout) == nil { throw ValidationError("--layout: give grid or speaker") }
        if let size {
            do { _ = try CompositeFormat(size: size) } catch { throw ValidationError("\(error)") }
        }
    }

    func runComposite(_ to: String) async throws {
        try await relayingOut(to) { destination, config in
            let format = try size.map { s throws(BotError) in try CompositeFormat(size: s) } ?? CompositeFormat()
            let relay = CompositeRelay(config: config, destination: destination, layout: CompositeLayout(rawValue: layout ?? "grid") ?? .grid,
                                       format: format, duration: try OptionCheck.seconds(duration, "--duration"))
            let report = try await runCancellableOnSignals(grace: .seconds(15)) { () async throws(BotError) in try await relay.run() }
            let encrypted = config.protection.isEncrypted
            print("audio \(Counters.line(report.audio, sending: false, encrypted: encrypted))")
            print("video \(Counters.line(report.video, sending: false, encrypted: encrypted))")
            print("composed \(report.participants) participant(s), \(relay.layout.rawValue) layout, \(format), encoded once"
                  + (relay.layout == .speaker ? "; speaker changes: \(report.speakerChanges)" : ""))
            print("relayed to \(destination) (handed to the output): audio frames \(report.audioSent), video frames \(report.videoSent); "
                  + "not sent while the destination was down: \(report.unsent), video before the output's first keyframe: \(report.beforeKeyFrame); "
                  + "outputs started: \(report.attempts), destination failures: \(report.failures); "
                  + "dropped in the output (the destination too slow): \(report.droppedInOutput); rejoins: \(report.rejoins)")
            print("composite losses: participants' audio dropped as late by the mixer: \(report.lateAudioMilliseconds) ms; "
                  + "pictures not made at \(format.fps) fps: \(report.picturesMissing) of \(report.picturesExpected)")
            if report.participants == 0 {
                throw CLIFailure("nobody published in room \(connection.room): nothing was relayed", code: .noInput)
            }
            if !report.opened { print("no frame opened (wrong key?): nothing was sent to \(destination)") }
            if let lost = report.incomplete { throw CLIFailure("the relay to \(destination) is incomplete: \(lost)", code: .incomplete) }
        }
    }
}
