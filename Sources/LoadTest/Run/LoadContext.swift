import Bot
import FrameCrypto
import GStreamerKit
import Foundation
import Janus
import Logging
import Synchronization
import Locking

/// What every bot of a run shares: where to connect, how media is protected, the shared
/// encoder, and the room's publisher list.
struct LoadContext: Sendable {
    var janusURL: String
    var janus: JanusSession.Options
    var ice = ICEServers()
    var room: Int64
    var protection: FrameProtection
    var library: PipelineLibrary
    var logger: Logger
    var source: LoadSource
    var watcher: RoomWatcher
    /// Feeds per subscriber (nil: all).
    var subscribeLimit: Int?
    /// Subscribers without jitter buffers (see `WebRTCBin.withoutJitterBuffers`).
    var plainReceive: Bool
    /// How long a join may take before it counts as failed (and is retried).
    var joinTimeout: Duration
    /// How long a bot that lost Janus or its media path keeps trying to come back.
    var rejoinTimeout: Duration
    /// How publishers send audio RTP.
    var sendPath: LoadPlan.SendPath
    /// Publisher attempts that wanted the direct path and sent through webrtcbin instead.
    let directFallbacks = SharedCount()
    /// How subscribers take received packets in.
    var receivePath: LoadPlan.ReceivePath
    /// 1 in N subscribers decodes its video (nil: none).
    var decodeEvery: Int?
    /// Direct-path publishers answer Janus's NACKs (`LoadPlan.answerNACKs`).
    var answerNACKs = true
    /// Direct-path publishers packetize their sealed frames in C from the fan-out (`sendFrames`),
    /// with no payloader per packet; `SFUBOT_LOAD_PACKETIZER=element` keeps the payloaders.
    var framePath = ProcessInfo.processInfo.environment["SFUBOT_LOAD_PACKETIZER"] != "element"
    /// Packets subscribers' nicesrc gave past the queue and through it (`ReceiveInline`),
    /// added when an attempt ends.
    let receivedPastQueue = SharedCount()
    let receivedThroughQueue = SharedCount()
}

/// A count shared by the run's bots.
final class SharedCount: Sendable {
    private let value = Atomic<Int>(0)
    func increment() { add(1) }
    func add(_ n: Int) { value.add(n, ordering: .relaxed) }
    var current: Int { value.load(ordering: .relaxed) }
}

extension LoadContext {
    /// The run's logger with the bot's name, so `-v` output can be filtered per bot.
    func logger(bot display: String) -> Logger {
        var log = logger
        log[metadataKey: "load.bot"] = "\(display)"
        return log
    }
}

/// The join phases of one attempt, marked from any thread.
final class PhaseClock: Sendable {
    let start = Date()
    private let phases = Locked(JoinPhases())

    enum Phase: Sendable {
        case websocket, session, attached, joined, negotiated, iceConnected, dtlsConnected, firstRTP, firstDecrypted
        var path: WritableKeyPath<JoinPhases, Double?> {
            switch self {
            case .websocket: \.websocket
            case .session: \.session
            case .attached: \.attached
            case .joined: \.joined
            case .negotiated: \.negotiated
            case .iceConnected: \.iceConnected
            case .dtlsConnected: \.dtlsConnected
            case .firstRTP: \.firstRTP
            case .firstDecrypted: \.firstDecrypted
            }
        }
    }

    /// Marks `phase` as reached now (or at `date`); the earliest mark counts.
    func mark(_ phase: Phase, at date: Date = Date()) {
        let t = date.timeIntervalSince(start)
        // RTP moving proves ICE and DTLS done (SRTP needs DTLS's keys), while webrtcbin's
        // state notifications may trail on its own thread by a few ms: bound them by it.
        let paths = phase == .firstRTP ? [phase.path, \.dtlsConnected, \.iceConnected] : [phase.path]
        phases.withLock { p in
            for path in paths where p[keyPath: path].map({ $0 > t }) ?? true { p[keyPath: path] = t }
        }
    }

    var snapshot: JoinPhases { phases.withLock { $0 } }
}

extension WebRTCBin {
    /// When ICE first became connected or completed (now, if webrtcbin did not say).
    var iceConnectedAt: Date {
        [firstReached("ice-connection-state", "connected"), firstReached("ice-connection-state", "completed")].compactMap { $0 }.min() ?? Date()
    }
}

/// Why a bot's attempt failed, as the report shows it.
struct LoadBotError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
    init(_ error: any Error) { description = (error as? LoadBotError)?.description ?? String(describing: error) }
}

/// Runs `body` or fails after `timeout`.
func within<T: Sendable>(_ timeout: Duration, _ what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw LoadBotError("\(what) took longer than \(timeout)")
        }
        return value
    }
}

extension FrameProtection {
    /// The same protection for one bot: its own key ring holding the current key with its own
    /// cipher pool, so hundreds of bots' streaming threads share no lock per frame.
    func forOneBot() -> FrameProtection {
        switch self {
        case .e2ee(let ring): .e2ee(KeyRing(current: ring.sealingKey?.withOwnCiphers()))
        case .perSender(let map): .perSender(map.withOwnCiphers())
        // Keys that name themselves live in one store; each stream keeps its own sealing state.
        case .indexed, .none: self
        }
    }

    /// A publisher's protection: with per-sender keys, its own newest key (none in the map:
    /// an empty ring, every frame dropped before sending, counted as a seal failure).
    func forPublisher(_ index: Int) -> FrameProtection {
        if case .indexed(var p) = self {
            p.sender = LoadPlan.senderID(index)
            return .indexed(p)
        }
        guard case .perSender(let map) = self else { return forOneBot() }
        return .e2ee(KeyRing(current: map.senders[LoadPlan.senderID(index)]?.newest?.withOwnCiphers()))
    }
}
