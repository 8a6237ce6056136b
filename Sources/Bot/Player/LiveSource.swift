import Comeback
import Foundation
import GStreamerKit
import Locking
import Logging
import Synchronization

/// A live source (RTMP, SRT, RTP) read for one publisher that outlives it: each connection is
/// a pipeline of its own (live-source.pipeline) whose frames go to the publisher through
/// `sink`. A source that ends, fails, or sends nothing for `silence` has dropped: the
/// connection goes, the publisher stays in the room sending nothing, and the source is tried
/// again with backoff (0.5 s doubling to 5 s, jittered) until it is back or the player stops.
public final class LiveSource: Sendable {
    public enum State: String, Sendable {
        /// Not connected yet.
        case connecting
        /// Frames are coming.
        case live
        /// Dropped; tried again with backoff, nothing sent meanwhile.
        case away
    }

    /// What the source did so far.
    public struct Counts: Sendable {
        /// Connections that delivered frames, and drops of those.
        public var connections = 0
        public var drops = 0
        /// Time without the source after it first came (the drops' gaps), and the longest gap.
        public var awaySeconds = 0.0
        public var longestGap = 0.0
        /// Whether the last connection's H.264 was sent as the source sent it (nil: no video yet).
        public var passthrough: Bool?
        /// Frames handed to the publisher, and those with none to take them.
        public var audioFrames = 0
        public var videoFrames = 0
        public var unsent = 0
    }

    /// Set when the run starts (`start`).
    struct Setup: Sendable {
        var library: PipelineLibrary
        var envelope: Player.VideoEnvelope
        var transcode: Bool
        var logger: Logger
        var onChange: @Sendable (State, String) -> Void
    }

    private struct Shared {
        var state = State.connecting
        var counts = Counts()
        var awaySince: ContinuousClock.Instant?
        var tracks = (audio: false, video: false)
        var firstFrame: ContinuousClock.Instant?
        var backAt: ContinuousClock.Instant?
        var pipeline: Pipeline?
        var task: Task<Void, Never>?
    }

    public let address: LiveSourceAddress
    /// A connection that sends nothing for this long has dropped.
    static let silence: Duration = .seconds(2)
    /// A connection with no frame this long after it opened is given up and made again.
    static let firstFrameTimeout: Duration = .seconds(10)
    let sink = LiveSink()
    private let shared = Locked(Shared())
    /// The encoder of the connection of the moment, when its video is transcoded.
    let encoder = Locked<Pad?>(nil)
    /// Monotonic nanoseconds of the last frame of the current connection (0: none yet).
    private let lastFrame = Atomic<UInt64>(0)

    public init(_ address: LiveSourceAddress) { self.address = address }

    public var state: State { shared.withLock { $0.state } }

    /// Whether the source is away or came back less than `window` ago: Janus not receiving the
    /// publisher's media then is the source's gap, not a lost path.
    func explainsSilence(window: Duration = .seconds(3)) -> Bool {
        shared.withLock { s in s.state != .live || s.backAt.map { ContinuousClock.now - $0 < window } ?? false }
    }

    public var counts: Counts {
        let (audio, video, unsent) = sink.counts
        var c = shared.withLock { s in
            var c = s.counts
            if let since = s.awaySince, s.counts.connections > 0 { c.awaySeconds += (ContinuousClock.now - since).seconds }
            return c
        }
        (c.audioFrames, c.videoFrames, c.unsent) = (audio, video, unsent)
        return c
    }

    /// Whether the source has video, known once `start` returned.
    var hasVideo: Bool { shared.withLock { $0.tracks.video } }

    /// Starts reading (in a task of its own) and returns once the source's tracks are known:
    /// its first frame, and every track's within `trackWindow` after. A source that is not
    /// there yet is waited for (tried with backoff); one with no audio is refused.
    func start(_ setup: Setup) async throws(BotError) {
        let task = Task { await self.loop(setup) }
        shared.withLock { $0.task = task }
        let trackWindow: Duration = .seconds(3)
        while true {
            do { try await Task.sleep(for: .milliseconds(100)) } catch { throw .stopped }
            let (first, tracks) = shared.withLock { ($0.firstFrame, $0.tracks) }
            guard let first else { continue }
            guard (tracks.audio && tracks.video) || ContinuousClock.now - first >= trackWindow else { continue }
            if !tracks.audio { throw .unplayable(address.description, "sends no audio (ECall calls need audio)") }
            return
        }
    }

    /// Stops reading: the connection's pipeline first (no message is delivered while the
    /// bus stream is cancelled), then the loop.
    func stop() async {
        let (pipeline, task) = shared.withLock { s in
            defer { s.pipeline = nil }
            return (s.pipeline, s.task)
        }
        await pipeline?.stop()
        task?.cancel()
        await task?.value
        sink.detach()
    }

    /// Asks the encoder of a transcoding connection for a keyframe (a passed-through source's
    /// keyframes come when the source sends them).
    func requestKeyFrame() { _ = encoder.withLock { $0 }?.requestKeyFrame() }

    private func loop(_ setup: Setup) async {
        var log = setup.logger
        log[metadataKey: "source"] = "\(address)"
        var backoff = Backoff(initial: .milliseconds(500), cap: .seconds(5))
        var attempt = 0
        while !Task.isCancelled {
            attempt += 1
            let (delivered, why) = await connect(setup, attempt: attempt, log)
            if Task.isCancelled { return }
            if delivered {
                backoff.reset()
                // Away since its last frame, not since the drop was seen.
                let idle = Duration.nanoseconds(Int64(Self.monotonicNow() - lastFrame.load(ordering: .relaxed)))
                shared.withLock { s in
                    s.state = .away
                    s.awaySince = .now - idle
                    s.counts.drops += 1
                }
            }
            let wait = backoff.nextDelay()
            let text = "source \(address) " + (delivered ? "dropped (\(why)): sending nothing until it is back" : "not there (\(why))")
                + "; trying again in \(String(format: "%.1f", wait.seconds)) s"
            if delivered || attempt == 1 || backoff.failures % 5 == 0 { log.warning("\(text)") } else { log.debug("\(text)") }
            if delivered { setup.onChange(.away, text) }
            try? await Task.sleep(for: wait)
        }
    }

    /// One connection, until it drops; whether it delivered a frame, and why it ended.
    private func connect(_ setup: Setup, attempt: Int, _ log: Logger) async -> (Bool, String) {
        let pipeline: Pipeline, probes: [PadProbe]
        do { (pipeline, probes) = try makePipeline(setup, log) } catch { return (false, "\(error)") }
        let bus = pipeline.bus.messages()
        lastFrame.store(0, ordering: .relaxed)
        sink.newConnection()
        shared.withLock { $0.pipeline = pipeline }
        // srtsrc (caller) connects while going to PLAYING: off the pool.
        do { try await OffPool.run { () throws(GStreamerError) in try pipeline.setState(.playing) } } catch {
            await pipeline.stop()
            return (false, "\(error)")
        }
        let opened = ContinuousClock.now
        let why: String = await withTaskGroup(of: String?.self) { group in
            group.addTask {
                for await message in bus {
                    switch message {
                    case .endOfStream: return "the stream ended"
                    case .error(let source, let text, _): return "\(source): \(text)"
                    default: continue
                    }
                }
                return nil
            }
            group.addTask {
                while true {
                    do { try await Task.sleep(for: .milliseconds(250)) } catch { return nil }
                    let last = self.lastFrame.load(ordering: .relaxed)
                    if last == 0, ContinuousClock.now - opened >= Self.firstFrameTimeout { return "no frame within \(Int(Self.firstFrameTimeout.seconds)) s" }
                    if last > 0, Self.monotonicNow() - last >= UInt64(Self.silence.seconds * 1e9) { return "nothing for \(Int(Self.silence.seconds)) s" }
                }
            }
            var first: String?
            while first == nil, let next = await group.next() { first = next }
            // Stopped before the bus stream is cancelled (see InputProbe.firstDecoded).
            await pipeline.stop()
            group.cancelAll()
            return first ?? "stopped"
        }
        encoder.withLock { $0 = nil }
        shared.withLock { s in if s.pipeline === pipeline { s.pipeline = nil } }
        withExtendedLifetime(probes) {}
        return (lastFrame.load(ordering: .relaxed) > 0, why)
    }

    func noteVideo(passthrough: Bool) { shared.withLock { $0.counts.passthrough = passthrough } }

    static func monotonicNow() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// A frame of this connection arrived: the first one brings the source (back).
    func arrived(video: Bool, _ setup: Setup, _ log: Logger) {
        guard lastFrame.exchange(Self.monotonicNow(), ordering: .relaxed) == 0 else {
            shared.withLock { s in if video { s.tracks.video = true } else { s.tracks.audio = true } }
            return
        }
        let gap: Double? = shared.withLock { s in
            if video { s.tracks.video = true } else { s.tracks.audio = true }
            if s.firstFrame == nil { s.firstFrame = .now }
            s.state = .live
            s.counts.connections += 1
            defer { s.awaySince = nil }
            guard let since = s.awaySince, s.counts.connections > 1 else { return nil }
            s.backAt = .now
            let gap = (ContinuousClock.now - since).seconds
            s.counts.awaySeconds += gap
            s.counts.longestGap = max(s.counts.longestGap, gap)
            return gap
        }
        if let gap {
            log.info("source \(address) is back after \(String(format: "%.1f", gap)) s: sending again as the same publisher")
            setup.onChange(.live, "source back after \(String(format: "%.1f", gap)) s")
        } else {
            log.info("source \(address) connected: sending")
        }
    }
}
