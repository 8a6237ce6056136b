public import FrameCrypto
import Comeback
import Foundation
import GStreamerKit
import Janus
import Locking
import Logging

/// Plays into a room as one publisher, each frame sealed as an ECall phone seals it: an audio
/// file (leaving at its end unless it loops), or a generated test pattern (audio and H.264
/// video, until stopped). Cancelling the task leaves cleanly.
public struct Player: Sendable {
    public enum Source: Sendable {
        /// Audio, or video with audio: H.264 the room takes is sent as it is, other video is
        /// transcoded once to ECall's envelope.
        case file(String)
        /// A white flash and a tick once a second, for sync checks (`play-test-pattern.pipeline`).
        case testPattern
        /// A live source (`relay --from`): never ends; a drop is waited out in the room (LiveSource).
        case live(LiveSourceAddress)
        /// A participant of another room (`relay --to-room`), their frames sealed again for this one.
        case room(RoomInput)
    }

    public internal(set) var config: BotConfig
    public let source: Source
    public let loop: Bool
    /// Stop after this long (default: the end of the file, or never for the test pattern).
    public let duration: Duration?
    /// What video files are transcoded to.
    public var envelope = VideoEnvelope()
    /// Re-encode video files to the envelope even when the room takes their H.264 as it is.
    public var transcodeVideo = false
    /// Audio frames sealed (or, without E2EE, sent as is), and sealing failures.
    public let stats = FrameStats()
    /// Video access units sealed, and sealing failures.
    public let videoStats = FrameStats()
    /// What the player is doing now (phase, last loss).
    public let status = LiveStatus()
    /// Pause and resume while it plays; start it paused to keep a paused job paused.
    public var pauses = PlaybackPauses()
    /// Seconds into the file of the last frame sealed (serve keeps it with a job's lease).
    public let played = PlayedPosition()
    /// Where in the file the first play starts (a playback another instance had begun).
    public var startAt: Double?
    /// TURN credentials fetched anew after a refusal (`BotConfig.refreshedTURN`).
    let freshTURN = FreshTURN()
    /// The connections to a `.live` source or the other room's participant: they come and go,
    /// the publisher stays.
    let live: (any LiveInput)?
    /// A `.live` source's connections (`relay --from`'s last line).
    public var liveSource: LiveSource? { live as? LiveSource }

    public init(config: BotConfig, source: Source, loop: Bool = false, duration: Duration? = nil) {
        self.config = config
        self.source = source
        live = switch source {
        case .live(let address): LiveSource(address)
        case .room(let input): input
        case .file, .testPattern: nil
        }
        self.loop = loop
        self.duration = duration
    }

    public init(config: BotConfig, file: String, loop: Bool = false) {
        self.init(config: config, source: .file(file), loop: loop)
    }

    /// `play` once the input is there (Player+Live.swift): the file is probed before joining
    /// (InputProbe), `progress` follows what was sent.
    func playMedia(_ progress: Progress) async throws(BotError) -> Report {
        var log = config.logger
        log[metadataKey: "component"] = "player"
        log[metadataKey: "room"] = "\(config.room)"
        defer { status.set(.done) }
        let info: InputProbe.Found? = if case .file(let file) = source { try await InputProbe.check(file) } else { nil }
        // Parsing makes a webrtcbin and the decoders: off the pool, as the state changes.
        var media = try await OffPool.run { () throws(BotError) -> Media in try self.makeMedia(info) }
        let started = Date()
        // `duration` counts from the first publish, as before any rejoin.
        var end: ContinuousClock.Instant?
        var session = try await config.connect(logger: log)
        var publisher = makePublisher(session, log)
        var joined: VideoRoom.Joined
        do { joined = try await publisher.join() } catch {
            await session.close()
            await media.pipeline.stop()
            throw error
        }
        log.info("joined room \(config.room) as publisher \(joined.id)")
        progress.joined(joined.id)
        status.set(.running)
        var dropped = (audio: 0, video: 0), rejoins = 0, resumeAt = startAt, turnFailures = 0
        // Since when every attempt ended in a TURN failure with no frame sent (nil: not now).
        var refusedSince: ContinuousClock.Instant?
        while true {
            let outcome: Outcome, attempt = ContinuousClock.now
            do { (outcome, end) = try await stream(media, publisher: publisher, until: end, resumeAt: resumeAt, logger: log) } catch {
                await publisher.leave(announce: false)
                await session.close()
                await media.pipeline.stop()
                throw error
            }
            dropped.audio += media.audioGate.dropped
            dropped.video += media.videoGate?.dropped ?? 0
            progress.dropped(audio: dropped.audio, video: dropped.video, rejoins: rejoins)
            guard case .lost(let loss) = outcome else { break }
            let why = freshTURN.applied(to: config).explain(loss)
            // Lost: the pipeline goes (a new webrtcbin needs a new one); the file goes on from here.
            resumeAt = media.position.last.map { max(0, $0 - 0.2) }
            let sessionGone = why == .sessionEnded
            log.warning("lost the call (\(why)); rejoining within \(config.rejoinTimeout)")
            status.set(.reconnecting)
            status.noteError("lost the call: \(why)")
            await publisher.leave(announce: !sessionGone)
            await media.pipeline.stop()
            if sessionGone { await session.close() }
            // A TURN server that refuses every allocation (a wrong password): bounded by
            // joinTimeout, not the whole rejoin window; a path that carried frames starts again.
            refusedSince = why.isTURNFailure && !media.audioGate.isOpen ? refusedSince ?? attempt : nil
            if let since = refusedSince, ContinuousClock.now - since >= config.joinTimeout {
                await session.close()
                throw .stalled("no media path within \(Int(config.joinTimeout.seconds)) s: \(why) (\(turnFailures + 1) attempts); nothing was sent")
            }
            let lostSession = session, lostAt = ContinuousClock.now
            // A refused TURN allocation fails again at once: back off, 0.5 s doubling to 30 s.
            if why.isTURNFailure {
                try? await Task.sleep(for: Backoff.turnRefused.delay(afterFailures: turnFailures))
                turnFailures += 1
                // Never the same refused credentials again when they can be fetched anew.
                let (next, outcome) = await freshTURN.applied(to: config).refreshedTURN()
                if !outcome.notes.isEmpty {
                    freshTURN.set(next)
                    log.warning("TURN credentials: \(outcome.notes.joined(separator: "; "))")
                }
            } else {
                turnFailures = 0
            }
            do {
                media = try await OffPool.run { () throws(BotError) -> Media in try self.makeMedia(info) }
                (session, publisher, joined) = try await rejoin(after: why, session: sessionGone ? nil : session, asking: joined.id, logger: log)
            } catch {
                await media.pipeline.stop()
                throw error
            }
            rejoins += 1
            progress.joined(joined.id)
            if session === lostSession { BotMetrics.mediaRestarted() } else { BotMetrics.rejoined() }
            BotMetrics.gap(seconds: (ContinuousClock.now - lostAt).seconds)
            status.set(.running)
            log.info("back in room \(config.room) as publisher \(joined.id) (rejoin \(rejoins))")
        }
        status.set(.stopping)
        // A session still reconnecting would hold the `leave` for its request timeout.
        let sessionOpen = await session.isOpen
        await publisher.leave(announce: sessionOpen)
        await session.close()
        await media.pipeline.stop()
        let audio = stats.snapshot, video = videoStats.snapshot
        return Report(frames: audio, framesSent: audio.sealed - dropped.audio,
                      videoFrames: video, videoFramesSent: video.sealed - dropped.video,
                      seconds: Date().timeIntervalSince(started), publisherID: joined.id, rejoins: rejoins)
    }

    private func makePublisher(_ session: JanusSession, _ log: Logger) -> Publisher {
        Publisher(session: session, room: config.room, display: config.display, mediaLossTimeout: config.mediaLossTimeout, keepaliveInterval: config.keepaliveInterval, logger: log)
    }

    /// Back in the room: on `session` if it is still good (only the media path was lost), else
    /// on new sessions until `rejoinTimeout`. The old id is asked for; one still taken (the
    /// old session not yet dropped by Janus) is retried, and after three tries Janus picks one.
    private func rejoin(after why: PeerLoss, session: JanusSession?, asking id: Int64,
                        logger log: Logger) async throws(BotError) -> (JanusSession, Publisher, VideoRoom.Joined) {
        let config = self.config
        @Sendable func join(_ s: JanusSession, _ attempt: Int) async throws(BotError) -> (Publisher, VideoRoom.Joined) {
            let p = Publisher(session: s, room: config.room, display: config.display, mediaLossTimeout: config.mediaLossTimeout, keepaliveInterval: config.keepaliveInterval, logger: log)
            do throws(BotError) {
                let joined = try await p.join(checkRoom: true, asking: attempt <= 3 ? id : nil)
                return (p, joined)
            } catch {
                await p.leave()
                throw error
            }
        }
        if let session {
            do {
                let (p, joined) = try await join(session, 1)
                return (session, p, joined)
            } catch {
                // The session may have gone meanwhile: fall back to new ones.
                log.warning("could not publish again on the same session: \(error)")
                await session.close()
            }
        }
        var rejoin = Rejoin(config: config, log: log)
        let (s, (p, joined)) = try await rejoin.attempt(cause: why.description, stillWanted: { !Task.isCancelled }, join)
        return (s, p, joined)
    }

    enum Outcome { case finished, lost(PeerLoss) }

    /// Publishes once webrtcbin asks to, starts the media when Janus reports the path up, then
    /// follows the bus until the end, `end` (from `duration` after this publish if not given), a
    /// failure (thrown) or a loss (returned, with the end to keep).
    private func stream(_ media: Media, publisher: Publisher, until end: ContinuousClock.Instant?, resumeAt: Double?,
                        logger log: Logger) async throws(BotError) -> (Outcome, ContinuousClock.Instant?) {
        let (failure, failed) = AsyncStream.makeStream(of: BotError.self)
        let (loss, lost) = AsyncStream.makeStream(of: PeerLoss.self)
        let mediaUp = Flag()
        await publisher.follow(media.webrtc)
        let watch = Task {
            for await event in publisher.events {
                switch event {
                case .mediaUp:
                    guard !mediaUp.isSet else { break }
                    mediaUp.set()
                    log.info("Janus: media path up, playing")
                    if !startMedia(media, at: resumeAt ?? 0) { failed.yield(.pipelineFailed("cannot seek in the file to start it")) }
                    if let hold = try? MediaPause(media) { pauses.attach { hold.apply($0) } }
                case .lost(let why): if !sourceWasAway(why) { lost.yield(why) }
                case .ice, .connection: break
                }
            }
        }
        let tlsWatch = config.watchTLSRefusals { lost.yield(.turnFailed($0)) }
        defer { watch.cancel(); tlsWatch.cancel(); pauses.detach() }
        let bus = media.pipeline.bus.messages()
        do throws(GStreamerError) {
            try await OffPool.run { [pipeline = media.pipeline] () throws(GStreamerError) in try pipeline.setState(.playing) }
        } catch { throw .media(error) }
        // webrtcbin asks for negotiation once RTP caps reach it (after the first encoded frame).
        do { try await publisher.publish(video: media.hasVideo) } catch {
            // A session that went while publishing is a loss to come back from, not a failure.
            if error.janusError?.isConnectionProblem == true { return (.lost(.sessionEnded), end) }
            throw error
        }
        let end = end ?? duration.map { ContinuousClock.now + $0 }
        let holding = Task {
            try await Task.sleep(for: .seconds(15))
            if !mediaUp.isSet { lost.yield(.iceFailed) }
        }
        defer { holding.cancel() }
        let stall = watchForStall(mediaUp, position: media.position) { failed.yield($0) }
        defer { stall.cancel() }

        let pace = media.pace
        enum Step: Sendable { case done, failed(BotError), lost(PeerLoss) }
        let step: Step = await withTaskGroup(of: Step?.self) { group in
            group.addTask {
                for await message in bus {
                    switch message {
                    case .segmentDone:
                        pace?.seekUpstream(flush: false, segment: true)
                    case .error(let source, let text, let debug):
                        return .failed(.pipelineFailed("\(source): \(text)" + (debug.map { " (\($0))" } ?? "")))
                    case .warning(let source, let text, _):
                        log.warning("\(source): \(text)")
                    default: break
                    }
                }
                return nil
            }
            group.addTask {
                for await reason in failure { return .failed(reason) }
                return nil
            }
            group.addTask {
                for await why in loss { return .lost(why) }
                return nil
            }
            group.addTask {
                var ended = 0
                for await _ in media.endOfFile {
                    ended += 1
                    // EOS is seen at the sealer: the last frames are still in the payloaders and
                    // webrtcbin, and leaving at once lost the last video frame of a clip.
                    if ended == media.tracks { try? await Task.sleep(for: .milliseconds(300)); return .done }
                }
                return nil
            }
            if let end {
                group.addTask {
                    try? await Task.sleep(until: end)
                    return .done
                }
            }
            var first: Step?
            while first == nil, let next = await group.next() { first = next }
            group.cancelAll()
            return first ?? .done
        }
        switch step {
        case .done: return (.finished, end)
        case .failed(let error): throw error
        case .lost(let why): return (.lost(why), end)
        }
    }
}
