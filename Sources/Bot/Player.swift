public import FrameCrypto
public import Foundation
import GStreamerKit
import Janus
import Logging

/// Plays a file into a room as one publisher, each Opus frame sealed as an ECall phone
/// seals it. Leaves the room at the end of the file unless it loops, or when cancelled.
public struct Player: Sendable {
    public let config: BotConfig
    public let file: String
    public let loop: Bool
    /// Frames sealed (or, without E2EE, sent as is), and sealing failures.
    public let stats = FrameStats()

    public init(config: BotConfig, file: String, loop: Bool = false) {
        self.config = config
        self.file = file
        self.loop = loop
    }

    public struct Report: Sendable {
        public var frames: FrameStats.Snapshot
        public var seconds: Double
        public var publisherID: Int64
    }

    /// Joins, publishes, plays and leaves. Cancelling the task stops playing and leaves cleanly.
    public func run() async throws(BotError) -> Report {
        let log = config.logger
        guard FileManager.default.isReadableFile(atPath: file) else { throw .inputNotFound(file) }
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
            return Report(frames: stats.snapshot, seconds: Date().timeIntervalSince(started), publisherID: joined.id)
        } catch {
            await session.close()
            media.pipeline.setStateQuietly(.null)
            throw BotError(error)
        }
    }

    private struct Media {
        let pipeline: Pipeline
        let webrtc: WebRTCBin
        let seal: PadProbe
        /// EOS seen leaving the encoder: webrtcbin's sinks never post EOS on the bus.
        let endOfFile: AsyncStream<Void>
        let endProbe: PadProbe
    }

    private func makeMedia() throws(BotError) -> Media {
        do {
            let pipeline = try Pipeline(description: config.pipelines.description("play-audio", ["file": file]))
            let webrtc = try WebRTCBin(pipeline.element(named: "webrtc"))
            let sealPad = try pipeline.element(named: "seal").staticPad("src")
            let seal = sealPad.attachSender(config.protection, stats: stats)
            let (endOfFile, ended) = AsyncStream.makeStream(of: Void.self)
            let endProbe = sealPad.onEndOfStream { ended.yield() }
            return Media(pipeline: pipeline, webrtc: webrtc, seal: seal, endOfFile: endOfFile, endProbe: endProbe)
        } catch let e as GStreamerError {
            throw .media(e)
        } catch {
            throw BotError(error)
        }
    }

    private func attach(_ session: JanusSession) async throws(BotError) -> JanusHandle {
        do { return try await session.attach(plugin: VideoRoom.plugin) } catch { throw .janus(error) }
    }

    /// Negotiates once webrtcbin asks to, then follows the bus until the file ends.
    private func stream(_ media: Media, handle: JanusHandle) async throws(BotError) {
        let log = config.logger
        let link = PeerLink(webrtc: media.webrtc, handle: handle, logger: log)
        let (negotiation, negotiationNeeded) = AsyncStream.makeStream(of: Void.self)
        let (failure, failed) = AsyncStream.makeStream(of: String.self)
        let ice = Task {
            await link.pump(onNegotiationNeeded: { negotiationNeeded.yield() }, onState: { s in
                if s == "failed" { failed.yield("ICE failed") }
            })
        }
        let remote = Task {
            for await event in handle.events {
                switch event {
                case .trickle(let mline, let candidate): link.addRemote(mline: mline, candidate: candidate)
                case .hangup(let reason): failed.yield("Janus hung up: \(reason)")
                case .webrtcUp: log.info("Janus: media path up")
                default: break
                }
            }
        }
        defer {
            ice.cancel()
            remote.cancel()
        }
        let bus = media.pipeline.bus.messages()
        do {
            try media.pipeline.setState(loop ? .paused : .playing)
            if loop { try await startLooping(media.pipeline) }
        } catch let e as GStreamerError { throw .media(e) } catch { throw BotError(error) }
        for await _ in negotiation { break }
        try await link.publish(video: false)

        // The file plays until its end (or forever with --loop); the task's cancellation stops it.
        let outcome: String? = await withTaskGroup(of: String?.self) { group in
            group.addTask {
                for await message in bus {
                    switch message {
                    case .segmentDone:
                        media.pipeline.seek(flush: false, segment: true)
                    case .error(let source, let text, let debug):
                        return "\(source): \(text)" + (debug.map { " (\($0))" } ?? "")
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
                for await _ in media.endOfFile { return nil }
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        if let outcome { throw .pipelineFailed(outcome) }
    }

    /// For --loop: a segment seek makes the end of the file a `segment-done` instead of EOS,
    /// and each non-flushing seek back keeps running time (and RTP timestamps) going forward.
    private func startLooping(_ pipeline: Pipeline) async throws {
        for _ in 0..<100 {
            if pipeline.seek(flush: true, segment: true) {
                try pipeline.setState(.playing)
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw BotError.pipelineFailed("cannot seek in \(file), so it cannot loop")
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

extension Pipeline {
    /// Stops without throwing: used on the way out, where a failure changes nothing.
    func setStateQuietly(_ state: State) { try? setState(state) }
}
