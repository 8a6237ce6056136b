public import FrameCrypto
public import Foundation
import GStreamerKit
import Janus
import Logging
import Synchronization

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
    }

    public let config: BotConfig
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

    public init(config: BotConfig, source: Source, loop: Bool = false, duration: Duration? = nil) {
        self.config = config
        self.source = source
        self.loop = loop
        self.duration = duration
    }

    public init(config: BotConfig, file: String, loop: Bool = false) {
        self.init(config: config, source: .file(file), loop: loop)
    }

    /// ECall phones send at most 854x480 at 10 fps; rooms cap bitrate at 128 kbit/s.
    public struct VideoEnvelope: Sendable {
        public var maxWidth = 854
        public var maxHeight = 480
        public var maxFPS = 10
        public var kilobitsPerSecond = 96
        public init() {}

        /// The largest even size within the envelope with the source's aspect ratio.
        public func fit(width: Int, height: Int) -> (width: Int, height: Int) {
            let scale = min(1, Double(maxWidth) / Double(width), Double(maxHeight) / Double(height))
            func even(_ x: Double) -> Int { max(2, Int(x) / 2 * 2) }
            return (even(Double(width) * scale), even(Double(height) * scale))
        }
    }

    public struct Report: Sendable {
        /// Audio frames sealed (with E2EE) or passed as is, including those sealed while the
        /// media path came up, which were dropped before sending.
        public var frames: FrameStats.Snapshot
        /// Audio frames that left for Janus.
        public var framesSent: Int
        /// Video access units sealed, and how many left for Janus.
        public var videoFrames: FrameStats.Snapshot
        public var videoFramesSent: Int
        public var seconds: Double
        public var publisherID: Int64
    }

    /// Joins, publishes, plays and leaves.
    public func run() async throws(BotError) -> Report {
        let log = config.logger
        if case .file(let file) = source, !FileManager.default.isReadableFile(atPath: file) { throw .inputNotFound(file) }
        let media = try makeMedia()
        let session: JanusSession
        do { session = try await JanusSession.connect(url: config.janusURL, options: config.janus, logger: log) } catch { throw .janus(error) }
        let started = Date()
        do {
            let handle = try await attach(session)
            guard try await VideoRoom.exists(handle, room: config.room) else { throw BotError.roomNotFound(config.room) }
            let joined = try await VideoRoom.joinAsPublisher(handle, room: config.room, display: config.display)
            log.info("joined room \(config.room) as publisher \(joined.id)")
            try await stream(media, handle: handle)
            await VideoRoom.leave(handle)
            await handle.detach()
            await session.close()
            media.pipeline.setStateQuietly(.null)
            let audio = stats.snapshot, video = videoStats.snapshot
            return Report(frames: audio, framesSent: audio.sealed - media.audioGate.dropped,
                          videoFrames: video, videoFramesSent: video.sealed - (media.videoGate?.dropped ?? 0),
                          seconds: Date().timeIntervalSince(started), publisherID: joined.id)
        } catch {
            await session.close()
            media.pipeline.setStateQuietly(.null)
            throw BotError(error)
        }
    }

    private struct Media {
        let pipeline: Pipeline
        let webrtc: WebRTCBin
        /// Seal, tap, end-of-stream and gate probes: they act as long as they are held.
        let probes: [PadProbe]
        /// EOS seen leaving the audio encoder: webrtcbin's sinks never post EOS on the bus.
        let endOfFile: AsyncStream<Void>
        /// Packets are dropped after the payloaders until the media path is up.
        let audioGate: Gate
        let videoGate: Gate?
        /// Where a keyframe is asked of the video encoder when the media path comes up.
        let videoEncoder: Pad?
        /// For files: where the restart and loop seeks go upstream.
        let pace: Pad?
        /// For files: the pacing elements, which get one ts-offset at the restart.
        let pacers: [Element]
        /// How many tracks must reach their end before the file has.
        let tracks: Int
        var hasVideo: Bool { videoGate != nil }
    }

    private func makeMedia() throws(BotError) -> Media {
        do {
            let description = switch source {
            case .file(let file): try fileDescription(file)
            case .testPattern: try config.pipelines.description("play-test-pattern")
            }
            let pipeline = try Pipeline(description: description)
            let webrtc = try WebRTCBin(pipeline.element(named: "webrtc"))
            for turn in config.turnServers { try webrtc.addTurnServer(turn) }
            let seal = try pipeline.element(named: "seal")
            let sealPad = try seal.staticPad("src")
            var probes = [sealPad.attachSender(config.protection, AudioFormat.self, stats: stats)]
            if let tap = config.frameTap {
                probes.append(try seal.staticPad("sink").addBufferObserver { tap(.beforeSeal, 0, $0) })
                probes.append(sealPad.addBufferObserver { tap(.afterSeal, 0, $0) })
            }
            let (endOfFile, ended) = AsyncStream.makeStream(of: Void.self)
            probes.append(sealPad.onEndOfStream { ended.yield() })
            var tracks = 1
            let (audioGate, audioGateProbe) = try pipeline.element(named: "pay").staticPad("src").addGate()
            probes.append(audioGateProbe)
            var videoGate: Gate?, videoEncoder: Pad?
            // Fail closed: a video branch must pass a sealer; a pipeline with a video payloader
            // (`vpay`) but no `vseal` would send plaintext video.
            let vpay = try? pipeline.element(named: "vpay")
            if vpay != nil, (try? pipeline.element(named: "vseal")) == nil { throw GStreamerError.missingElement("vseal") }
            if let vseal = try? pipeline.element(named: "vseal") {
                let vsealPad = try vseal.staticPad("src")
                probes.append(vsealPad.attachSender(config.protection, VideoFormat.self, stats: videoStats))
                probes.append(vsealPad.onEndOfStream { ended.yield() })
                tracks += 1
                let (gate, probe) = try pipeline.element(named: "vpay").staticPad("src").addGate()
                videoGate = gate
                videoEncoder = try pipeline.element(named: "vpay").staticPad("sink")
                probes.append(probe)
            }
            let pacers = ["pace", "vpace"].compactMap { try? pipeline.element(named: $0) }
            let pace = try pacers.first?.staticPad("sink")
            return Media(pipeline: pipeline, webrtc: webrtc, probes: probes, endOfFile: endOfFile,
                         audioGate: audioGate, videoGate: videoGate, videoEncoder: videoEncoder, pace: pace, pacers: pacers, tracks: tracks)
        } catch let e as GStreamerError {
            throw .media(e)
        } catch {
            throw BotError(error)
        }
    }

    /// The pipeline for a file: audio only, or video and audio transcoded to the envelope.
    private func fileDescription(_ file: String) throws -> String {
        let info = try MediaInfo.discover(file)
        guard let video = info.videoCaps else { return try config.pipelines.description("play-audio", ["file": file]) }
        guard info.hasAudio else { throw BotError.pipelineFailed("\(file) has video but no audio: ECall calls need audio") }
        if !transcodeVideo, RoomVideoCodec.acceptsAsIs(video) {
            config.logger.info("video \(capsString("profile", in: video) ?? "") H.264 level \(capsString("level", in: video) ?? "?"): sent as it is")
            return try config.pipelines.description("play-av-h264", ["file": file])
        }
        let size = envelope.fit(width: capsInt("width", in: video) ?? envelope.maxWidth, height: capsInt("height", in: video) ?? envelope.maxHeight)
        config.logger.info("video \(capsInt("width", in: video) ?? 0)x\(capsInt("height", in: video) ?? 0) → \(size.width)x\(size.height) H.264 ≤ \(envelope.maxFPS) fps")
        return try config.pipelines.description("play-av", [
            "file": file, "width": "\(size.width)", "height": "\(size.height)",
            "fps": "\(envelope.maxFPS)", "video_kbps": "\(envelope.kilobitsPerSecond)",
        ])
    }

    private func attach(_ session: JanusSession) async throws(BotError) -> JanusHandle {
        do { return try await session.attach(plugin: VideoRoom.plugin) } catch { throw .janus(error) }
    }

    /// Starts media once the path is up: a file from its first sample (what was encoded while
    /// DTLS came up is dropped and the file sought back), a live source from now.
    private func startMedia(_ media: Media) -> Bool {
        guard let pace = media.pace else {
            media.audioGate.open()
            media.videoGate?.open()
            // Start on a keyframe: the one Janus asked for when this publisher came up was
            // encoded while the gate was still closed.
            media.videoEncoder?.requestKeyFrame()
            return true
        }
        // Every track is paced from 200 ms from now: one offset for all, so they stay together.
        if let now = media.pipeline.runningTime {
            for pacer in media.pacers { try? pacer.set("ts-offset", String(Int64(now) + 200_000_000)) }
        }
        media.audioGate.openAfterNextFlush()
        media.videoGate?.openAfterNextFlush()
        return pace.seekUpstream(flush: true, segment: loop)
    }

    /// Negotiates once webrtcbin asks to, then follows the bus until the end.
    private func stream(_ media: Media, handle: JanusHandle) async throws(BotError) {
        let log = config.logger
        let link = PeerLink(webrtc: media.webrtc, handle: handle, logger: log)
        let (negotiation, negotiationNeeded) = AsyncStream.makeStream(of: Void.self)
        let (failure, failed) = AsyncStream.makeStream(of: BotError.self)
        let mediaUp = Flag()
        let ice = Task {
            await link.pump(onNegotiationNeeded: { negotiationNeeded.yield() }, onState: { s in
                if s == "failed" { failed.yield(.negotiation("ICE failed: no candidate pair works")) }
            })
        }
        let remote = Task {
            for await event in handle.events {
                switch event {
                case .trickle(let mline, let candidate): link.addRemote(mline: mline, candidate: candidate)
                case .hangup(let reason): failed.yield(.negotiation("Janus hung up: \(reason)"))
                case .detached: failed.yield(.janus(.disconnected))
                case .webrtcUp:
                    guard !mediaUp.isSet else { break }
                    mediaUp.set()
                    log.info("Janus: media path up, playing")
                    if !startMedia(media) { failed.yield(.pipelineFailed("cannot seek in the file to start it")) }
                default: break
                }
            }
            if !Task.isCancelled { failed.yield(.janus(.disconnected)) }
        }
        defer {
            ice.cancel()
            remote.cancel()
        }
        let bus = media.pipeline.bus.messages()
        do { try media.pipeline.setState(.playing) } catch { throw .media(error) }
        // webrtcbin asks for negotiation once RTP caps reach it (after the first encoded frame).
        for await _ in negotiation { break }
        try await link.publish(video: media.hasVideo)
        let holding = Task {
            try await Task.sleep(for: .seconds(15))
            if !mediaUp.isSet { failed.yield(.negotiation("Janus did not report the media path up within 15 s (ICE/DTLS failed?)")) }
        }
        defer { holding.cancel() }

        let duration = self.duration, pace = media.pace
        let outcome: BotError? = await withTaskGroup(of: BotError?.self) { group in
            group.addTask {
                for await message in bus {
                    switch message {
                    case .segmentDone:
                        pace?.seekUpstream(flush: false, segment: true)
                    case .error(let source, let text, let debug):
                        return .pipelineFailed("\(source): \(text)" + (debug.map { " (\($0))" } ?? ""))
                    case .warning(let source, let text, _):
                        log.warning("\(source): \(text)")
                    default: break
                    }
                }
                return nil
            }
            group.addTask {
                for await reason in failure { return reason }
                return nil
            }
            group.addTask {
                var ended = 0
                for await _ in media.endOfFile {
                    ended += 1
                    if ended == media.tracks { return nil }
                }
                return nil
            }
            if let duration {
                group.addTask {
                    try? await Task.sleep(for: duration)
                    return nil
                }
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        if let outcome { throw outcome }
    }
}

extension BotError {
    /// Any error from a bot's steps, as a BotError.
    init(_ error: any Error) {
        switch error {
        case let e as BotError: self = e
        case let e as JanusError: self = .janus(e)
        case let e as GStreamerError: self = .media(e)
        default: self = .negotiation(String(describing: error))
        }
    }
}


/// A one-way switch shared between tasks.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}
