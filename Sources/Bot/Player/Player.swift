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
        var log = config.logger
        log[metadataKey: "component"] = "player"
        log[metadataKey: "room"] = "\(config.room)"
        if case .file(let file) = source, !FileManager.default.isReadableFile(atPath: file) { throw .inputNotFound(file) }
        let media = try makeMedia()
        let session: JanusSession
        do { session = try await JanusSession.connect(url: config.janusURL, options: config.janus, logger: log) } catch { throw .janus(error) }
        let started = Date()
        let publisher = Publisher(session: session, room: config.room, display: config.display, logger: log)
        do {
            let joined = try await publisher.join()
            log.info("joined room \(config.room) as publisher \(joined.id)")
            try await stream(media, publisher: publisher, logger: log)
            await publisher.leave()
            await session.close()
            media.pipeline.setStateQuietly(.null)
            let audio = stats.snapshot, video = videoStats.snapshot
            return Report(frames: audio, framesSent: audio.sealed - media.audioGate.dropped,
                          videoFrames: video, videoFramesSent: video.sealed - (media.videoGate?.dropped ?? 0),
                          seconds: Date().timeIntervalSince(started), publisherID: joined.id)
        } catch {
            await publisher.leave(announce: false)
            await session.close()
            media.pipeline.setStateQuietly(.null)
            throw BotError(error)
        }
    }

    /// Publishes once webrtcbin asks to, starts the media when Janus reports the path up, then
    /// follows the bus until the end, the duration, or a failure.
    private func stream(_ media: Media, publisher: Publisher, logger log: Logger) async throws(BotError) {
        let (failure, failed) = AsyncStream.makeStream(of: BotError.self)
        let mediaUp = Flag()
        await publisher.follow(media.webrtc)
        let watch = Task {
            for await event in publisher.events {
                switch event {
                case .mediaUp:
                    guard !mediaUp.isSet else { break }
                    mediaUp.set()
                    log.info("Janus: media path up, playing")
                    if !startMedia(media) { failed.yield(.pipelineFailed("cannot seek in the file to start it")) }
                case .lost(let why): failed.yield(why.error)
                case .ice: break
                }
            }
        }
        defer { watch.cancel() }
        let bus = media.pipeline.bus.messages()
        do { try media.pipeline.setState(.playing) } catch { throw .media(error) }
        // webrtcbin asks for negotiation once RTP caps reach it (after the first encoded frame).
        try await publisher.publish(video: media.hasVideo)
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

/// A one-way switch shared between tasks.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}
