import GStreamerKit
import Logging

/// A `.live` player: the source is read before joining (its tracks decide the publisher's
/// m-lines) and outlives every rejoin; each publishing pipeline is attached to it in turn.
extension Player {
    /// `run()` without its hard end (Player+Bounds.swift).
    func play(_ progress: Progress) async throws(BotError) -> Report {
        guard let live else { return try await playMedia(progress) }
        var log = config.logger
        log[metadataKey: "component"] = "live-source"
        log.info("reading \(live.shown); joining room \(config.room) once it sends")
        let status = self.status
        let setup = LiveSource.Setup(library: config.pipelines, envelope: envelope, transcode: transcodeVideo, logger: log) { state, text in
            if state == .away { status.noteError(text) }
        }
        do {
            try await live.start(setup)
            let report = try await playMedia(progress)
            await live.stop()
            return report
        } catch {
            await live.stop()
            throw error
        }
    }

    /// Janus stopped receiving while the live source was away: the publisher stays (logged).
    func sourceWasAway(_ why: PeerLoss) -> Bool {
        guard case .mediaLost = why, let live, live.explainsSilence(window: .seconds(3)) else { return false }
        config.logger.info("Janus stopped receiving while the input was away: staying in the room as the same publisher")
        return true
    }

    /// The publishing pipeline: Opus always (ECall calls need audio), H.264 if the source has video.
    func liveDescription() throws(BotError) -> String {
        var parts = [try config.pipelines.description(live?.audioIsOpus == true ? "play-live-opus" : "play-live-audio")]
        if live?.hasVideo == true { parts.append(try config.pipelines.description("play-live-video", config.protection.h264SendIntervals)) }
        return parts.joined(separator: " ")
    }

    /// Feeds `pipeline` from the source from now on. Keyframe requests (Janus's PLIs, the one
    /// at media start) end at `vsrc` and go to the source's encoder.
    func attach(_ live: any LiveInput, to pipeline: Pipeline) throws -> [PadProbe] {
        let audio = try AppSource(named: "asrc", in: pipeline)
        let video = live.hasVideo ? try AppSource(named: "vsrc", in: pipeline) : nil
        var probes: [PadProbe] = []
        if video != nil {
            probes.append(try pipeline.element(named: "vsrc").staticPad("src").onKeyUnitRequest(drop: true) { live.requestKeyFrame() })
        }
        live.sink.attach(pipeline: pipeline, audio: audio, video: video)
        return probes
    }
}
