import Comeback
import CoreMetrics
import Foundation
import Locking
import Logging
import Synchronization
import TextWebSocket

/// One participant's speaker stream (`relay --to ws://…/{participant}`): its WebSocket
/// connection, made when the participant is subscribed and made again with backoff when the
/// consumer closes or drops it, until the participant leaves or the relay ends.
///
/// Each connection begins with `start`, sent with its first PCM (so `media_time` is that
/// sample's). The call never waits for a consumer: PCM that comes while no connection is up is
/// counted `unsent`, PCM a slow consumer has no room for (`queueBound` messages) is dropped and
/// counted. Messages are queued under one lock, so they leave in the order they were decided.
final class SpeakerChannel: RelayFrameSink {
    struct Who: Sendable {
        /// The id in the URL and the messages: the ECall user id, else the feed id.
        let id: String
        let display: String
    }

    let who: Who
    let keyFrames = Locked<KeyFrameRequests?>(nil)
    let counts: SpeakerCounts
    private let url: String
    private let shown: String
    private let audio: SpeakerStreamAudio
    private let origin: ContinuousClock.Instant
    private let metrics: RelayMetrics
    private let pauses: RecordingPauses
    /// The relay's: each connection that opens is the destination up, each that fails a failure.
    private let status: RelayStatus
    private let log: Logger
    private let state = Locked(State())
    private let stop = AsyncStream.makeStream(of: Void.self)
    /// Listening (`--ws-listen`): consumers connect to the relay and are attached here.
    private let listening: Bool
    private let offered = AsyncStream.makeStream(of: TextWebSocket.self)

    /// Queued messages per connection at most: about 2 s of 20 ms PCM buffers.
    static let queueBound = 100
    /// RMS of 16-bit samples above which a buffer is speech (about -45 dBFS).
    static let speechLevel = 180.0
    static let speechHangover: Duration = .milliseconds(600)
    static let mutedAfter: Duration = .seconds(1)

    private struct State {
        var socket: TextWebSocket?
        var started = false
        var lastAudio: ContinuousClock.Instant?
        var lastLoud: ContinuousClock.Instant?
        var muted = false
        var speaking = false
        var leaving = false
    }

    init(_ who: Who, destination: SpeakerStreamDestination, audio: SpeakerStreamAudio, origin: ContinuousClock.Instant,
         counts: SpeakerCounts, metrics: RelayMetrics, pauses: RecordingPauses, status: RelayStatus, listening: Bool = false, logger: Logger) {
        self.who = who
        url = destination.url(for: who.id)
        shown = destination.description
        self.audio = audio
        self.origin = origin
        self.counts = counts
        self.metrics = metrics
        self.pauses = pauses
        self.status = status
        self.listening = listening
        log = logger
    }

    // MARK: - PCM (the branch's streaming thread)

    func pushAudio(_ pcm: UnsafeRawBufferPointer) {
        // Paused: counted and not sent; the connection stays (and `muted` is not said).
        if pauses.isPaused {
            counts.paused.increment()
            metrics.paused.increment()
            state.withLock { $0.lastAudio = .now }
            return
        }
        let now = ContinuousClock.now
        // Opus is not decoded here: no level, no `speaking`.
        let loud = audio.isPCM ? Self.rms(pcm) >= Self.speechLevel : nil
        let bytes = [UInt8](pcm)
        let outcome: Bool? = state.withLock { s in
            s.lastAudio = now
            guard let socket = s.socket, !s.leaving else { return nil }
            if !s.started {
                s.started = true
                send(.start(participant: who.id, display: who.display, audio: audio, mediaTime: origin.duration(to: now).seconds), on: socket)
            }
            if s.muted {
                s.muted = false
                send(.muted(false), on: socket)
            }
            if loud == true { s.lastLoud = now }
            if loud == true, !s.speaking {
                s.speaking = true
                send(.speaking(true), on: socket)
            } else if loud == false, s.speaking, let last = s.lastLoud, last.duration(to: now) > Self.speechHangover {
                s.speaking = false
                send(.speaking(false), on: socket)
            }
            return socket.enqueue(.binary(bytes))
        }
        switch outcome {
        case nil:
            counts.unsent.increment()
            metrics.audioUnsent.increment()
        case true?:
            counts.sent.increment()
            counts.bytes.add(bytes.count)
            metrics.audioSent.increment()
            metrics.bytes.increment(by: bytes.count)
        case false?:
            counts.dropped.increment()
            metrics.audioDropped.increment()
        }
    }

    func pushVideo(_ au: UnsafeRawBufferPointer, isKey: Bool) -> RelayGraph.PushResult { .refused }

    /// A text message the queue has no room for is a drop like PCM's.
    private func send(_ message: SpeakerStreamMessage, on socket: TextWebSocket) {
        if !socket.enqueue(.text(message.json)) { counts.dropped.increment() }
    }

    static func rms(_ pcm: UnsafeRawBufferPointer) -> Double {
        let samples = pcm.bindMemory(to: Int16.self)
        guard !samples.isEmpty else { return 0 }
        var sum = 0.0
        for s in samples { sum += Double(s) * Double(s) }
        return (sum / Double(samples.count)).squareRoot()
    }

    // MARK: - The connection

    /// Connects, and connects again after the consumer closes or drops the connection (backoff
    /// 0.5 s doubling to 5 s), until `leave`. Says `muted` when no audio came for a second.
    func run() async {
        if listening { return await serveConsumers() }
        var backoff = Backoff(initial: .milliseconds(500), cap: .seconds(5))
        var limits = TextWebSocket.Limits()
        limits.maxQueuedMessages = Self.queueBound
        while !isLeaving {
            let socket: TextWebSocket
            do {
                socket = try await TextWebSocket.connect(url: url, subprotocol: "sfubot-speaker.v1", limits: limits, logger: log)
            } catch {
                counts.failures.increment()
                metrics.failures.increment()
                status.destinationFailed("\(who.id)'s connection: \(error.reason)", destination: shown, afterHolding: false)
                log.warning("speaker stream of \(who.id) to \(shown): \(error.reason); trying again (the call goes on)")
                if await !pause(backoff.nextDelay()) { return }
                continue
            }
            counts.connections.increment()
            status.outputUp(destination: shown)
            log.info("speaker stream of participant \(who.id) '\(who.display)' open to \(shown)")
            let opened = ContinuousClock.now
            state.withLock { s in (s.socket, s.started, s.speaking, s.muted) = (socket, false, false, false) }
            let drain = Task { for await _ in socket.incoming {} }
            await watch(socket)
            drain.cancel()
            state.withLock { s in if s.socket === socket { s.socket = nil } }
            if isLeaving { return }
            counts.failures.increment()
            metrics.failures.increment()
            let held = opened.duration(to: .now) > RelayStatus.held
            status.destinationFailed("\(who.id)'s connection closed by the consumer", destination: shown, afterHolding: held)
            if held { backoff.reset() }
            let wait = backoff.nextDelay()
            log.warning("speaker stream of \(who.id) to \(shown) closed by the consumer; connecting again in \(String(format: "%.1f", wait.seconds)) s")
            if await !pause(wait) { return }
        }
    }

    /// Listening: each consumer that connects for this participant gets the stream from then on
    /// (a `start` first); a second one replaces the first. A consumer leaving is its choice, not
    /// a failure: what is decoded while none is connected is counted `unsent`, not lost.
    private func serveConsumers() async {
        for await socket in offered.stream {
            guard !isLeaving else {
                socket.close()
                continue
            }
            let previous = state.withLock { s -> TextWebSocket? in
                defer { (s.socket, s.started, s.speaking, s.muted) = (socket, false, false, false) }
                return s.socket
            }
            previous?.close()
            counts.connections.increment()
            status.outputUp(destination: shown)
            log.info("speaker stream of participant \(who.id) '\(who.display)': a consumer connected")
            Task { [self] in
                let drain = Task { for await _ in socket.incoming {} }
                await watch(socket)
                drain.cancel()
                state.withLock { s in if s.socket === socket { s.socket = nil } }
            }
        }
    }

    /// Listening: a consumer connected for this participant.
    func attach(_ socket: TextWebSocket) { offered.continuation.yield(socket) }

    /// Until the socket closes: every 250 ms, `muted` once audio has been away for a second.
    private func watch(_ socket: TextWebSocket) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await socket.closed() }
            group.addTask { [self] in
                while (try? await Task.sleep(for: .milliseconds(250))) != nil {
                    state.withLock { s in
                        guard s.started, !s.muted, !s.leaving, let last = s.lastAudio, last.duration(to: .now) > Self.mutedAfter else { return }
                        s.muted = true
                        s.speaking = false
                        self.send(.muted(true), on: socket)
                    }
                }
            }
            await group.next()
            group.cancelAll()
        }
    }

    private var isLeaving: Bool { state.withLock { $0.leaving } }

    /// Waits `delay`; false if the channel is leaving meanwhile.
    private func pause(_ delay: Duration) async -> Bool {
        let timer = Task { [continuation = stop.continuation] in
            guard (try? await Task.sleep(for: delay)) != nil else { return }
            continuation.yield()
        }
        defer { timer.cancel() }
        for await _ in stop.stream { break }
        return !isLeaving
    }

    /// The participant left (`left` is true) or the relay ends: the connection gets `left` (a
    /// `start` first if nothing was sent yet) and closes after what is queued; `run` returns.
    func leave(left: Bool) {
        state.withLock { s in
            guard !s.leaving else { return }
            s.leaving = true
            guard let socket = s.socket else { return }
            if left {
                if !s.started { send(.start(participant: who.id, display: who.display, audio: audio, mediaTime: origin.duration(to: .now).seconds), on: socket) }
                send(.left, on: socket)
            }
            socket.close()
        }
        stop.continuation.yield()
        offered.continuation.finish()
    }
}

/// A relay's speaker-stream counters, over every participant's channel.
final class SpeakerCounts: Sendable {
    /// PCM messages queued on a connection, and their bytes.
    let sent = Counter()
    let bytes = ByteCounter()
    /// PCM (and its text) a slow consumer had no room for.
    let dropped = Counter()
    /// PCM decoded while the participant's connection was down.
    let unsent = Counter()
    /// Held back while paused.
    let paused = Counter()
    /// Connections opened, and failures (a connect refused, a consumer that closed or dropped).
    let connections = Counter()
    let failures = Counter()
    /// Participants given a channel.
    let speakers = Counter()
}

final class ByteCounter: Sendable {
    private let count = Atomic<Int>(0)
    func add(_ n: Int) { count.add(n, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}
