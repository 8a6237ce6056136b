public import FrameCrypto
public import Foundation
import GStreamerKit
import Janus
import Logging
import Synchronization

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
        /// Frames sealed (with E2EE) or passed as is, including those sealed while the media
        /// path came up, which were dropped before sending.
        public var frames: FrameStats.Snapshot
        /// Frames that left for Janus.
        public var framesSent: Int
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
            return Report(frames: stats.snapshot, framesSent: stats.snapshot.sealed - media.gate.dropped,
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
        let seal: PadProbe
        /// EOS seen leaving the encoder: webrtcbin's sinks never post EOS on the bus.
        let endOfFile: AsyncStream<Void>
        let endProbe: PadProbe
        let taps: [PadProbe]
        /// Drops encoded frames until the media path is up; the file then restarts from 0.
        let gate: Gate
        let gateProbe: PadProbe
        /// Where the restart and loop seeks go upstream.
        let pace: Pad
    }

    private func makeMedia() throws(BotError) -> Media {
        do {
            let pipeline = try Pipeline(description: config.pipelines.description("play-audio", ["file": file]))
            let webrtc = try WebRTCBin(pipeline.element(named: "webrtc"))
            let sealPad = try pipeline.element(named: "seal").staticPad("src")
            let seal = sealPad.attachSender(config.protection, stats: stats)
            var taps: [PadProbe] = []
            if let tap = config.frameTap {
                taps.append(try pipeline.element(named: "seal").staticPad("sink").addBufferObserver { tap(.beforeSeal, 0, $0) })
                taps.append(sealPad.addBufferObserver { tap(.afterSeal, 0, $0) })
            }
            let (endOfFile, ended) = AsyncStream.makeStream(of: Void.self)
            let endProbe = sealPad.onEndOfStream { ended.yield() }
            let (gate, gateProbe) = try pipeline.element(named: "pay").staticPad("src").addGate()
            let pace = try pipeline.element(named: "pace").staticPad("sink")
            return Media(pipeline: pipeline, webrtc: webrtc, seal: seal, endOfFile: endOfFile, endProbe: endProbe, taps: taps,
                         gate: gate, gateProbe: gateProbe, pace: pace)
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
                case .detached:
                    failed.yield(.janus(.disconnected))
                case .webrtcUp:
                    log.info("Janus: media path up, playing")
                    guard !mediaUp.isSet else { break }
                    mediaUp.set()
                    // Start the file over: what was encoded while DTLS came up was dropped.
                    media.gate.openAfterNextFlush()
                    if !media.pace.seekUpstream(flush: true, segment: loop) { failed.yield(.pipelineFailed("cannot seek in \(file) to start it")) }
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
        try await link.publish(video: false)
        let holding = Task {
            try await Task.sleep(for: .seconds(15))
            if !mediaUp.isSet { failed.yield(.negotiation("Janus did not report the media path up within 15 s (ICE/DTLS failed?)")) }
        }
        defer { holding.cancel() }

        // The file plays until its end (or forever with --loop); the task's cancellation stops it.
        let outcome: BotError? = await withTaskGroup(of: BotError?.self) { group in
            group.addTask {
                for await message in bus {
                    switch message {
                    case .segmentDone:
                        media.pace.seekUpstream(flush: false, segment: true)
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
                for await _ in media.endOfFile { return nil }
                return nil
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

extension Pipeline {
    /// Stops without throwing: used on the way out, where a failure changes nothing.
    func setStateQuietly(_ state: State) { try? setState(state) }
}

/// A one-way switch shared between tasks.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}
