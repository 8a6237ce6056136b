public import GStreamerKit
public import Janus
public import Logging
import Synchronization
import Locking

/// A VideoRoom publisher: join, then offer/configure/answer once webrtcbin asks to negotiate,
/// candidates both ways, `webrtcup`, leave. The one copy of the publisher handshake: the
/// player and the load test's publisher bots both use it.
///
/// Use: `join()`; `follow(webrtc)` before the pipeline plays (webrtcbin asks to negotiate once
/// RTP caps reach it); `publish(video:)`; then watch `events` until `leave()`.
public actor Publisher {
    public enum State: Sendable, Equatable {
        case idle
        case joining
        case joined(feedID: Int64)
        case publishing(feedID: Int64)
        /// Janus reported the media path up.
        case live(feedID: Int64)
        case leaving
        case left
    }

    /// What the caller watches after `publish`.
    public enum Event: Sendable {
        case ice(String)
        /// webrtcbin's connection state (`connected`: ICE and DTLS done).
        case connection(String)
        case mediaUp
        case lost(PeerLoss)
    }

    public private(set) var state = State.idle
    /// ICE states, media up, and loss; ends at `leave`.
    public nonisolated let events: AsyncStream<Event>
    private let eventSink: AsyncStream<Event>.Continuation
    private let session: JanusSession
    private let room: Int64
    private let display: String
    /// Janus saying it stopped receiving our media for this long counts as a lost path.
    private let mediaLossTimeout: Duration?
    private var mediaLossTimer: Task<Void, Never>?
    private var log: Logger
    private var handle: JanusHandle?
    private var link: PeerLink?
    private var tasks: [Task<Void, Never>] = []
    /// webrtcbin's requests to negotiate, consumed by `publish`.
    private let negotiation = AsyncStream.makeStream(of: Void.self)
    /// Pings on a `keepalive` data channel this often (nil: no channel), as ECall phones do.
    private let keepaliveInterval: Duration?
    /// The keepalive's latest ledger, written from its task, read by anyone.
    private let keepaliveState = KeepaliveSnapshot()

    public init(session: JanusSession, room: Int64, display: String, mediaLossTimeout: Duration? = nil,
                keepaliveInterval: Duration? = nil, logger: Logger) {
        self.session = session
        self.room = room
        self.display = display
        self.mediaLossTimeout = mediaLossTimeout
        self.keepaliveInterval = keepaliveInterval
        log = logger
        (events, eventSink) = AsyncStream.makeStream(of: Event.self)
    }

    /// Attaches, checks that the room exists (unless the caller knows it does), and joins as a
    /// publisher (`join`, `ptype: publisher`). `attached` is called once the handle is.
    @discardableResult
    public func join(checkRoom: Bool = true, asking id: Int64? = nil,
                     attached: @Sendable () -> Void = {}) async throws(BotError) -> VideoRoom.Joined {
        guard state == .idle else { throw .negotiation("publisher \(display) joined twice") }
        state = .joining
        do {
            let handle = try await session.attach(plugin: VideoRoom.plugin)
            self.handle = handle
            attached()
            guard state == .joining else { throw BotError.janus(.disconnected) }
            if checkRoom, try await !VideoRoom.exists(handle, room: room) { throw BotError.roomNotFound(room) }
            guard state == .joining else { throw BotError.janus(.disconnected) }
            let joined = try await VideoRoom.joinAsPublisher(handle, room: room, display: display, id: id)
            guard state == .joining else { throw BotError.janus(.disconnected) }
            state = .joined(feedID: joined.id)
            log[metadataKey: "janus.feed"] = "\(joined.id)"
            return joined
        } catch {
            if state == .joining { state = .idle }
            throw BotError(error)
        }
    }

    /// Starts carrying candidates and events between `webrtc` and the handle. Call before the
    /// pipeline plays, so webrtcbin's first request to negotiate is seen.
    public func follow(_ webrtc: WebRTCBin) {
        guard case .joined = state, let handle, link == nil else { return }
        let link = PeerLink(webrtc: webrtc, handle: handle, logger: log)
        self.link = link
        let (peer, peerTasks) = link.follow()
        let sink = eventSink, negotiation = self.negotiation.continuation
        tasks = peerTasks + [Task { [weak self] in
            for await event in peer {
                switch event {
                case .negotiationNeeded: negotiation.yield()
                case .ice(let s): sink.yield(.ice(s))
                case .connection(let s): sink.yield(.connection(s))
                case .mediaUp:
                    await self?.mediaUp()
                    sink.yield(.mediaUp)
                case .lost(let why): sink.yield(.lost(why))
                case .receiving(let type, let receiving): await self?.janusReceives(type, receiving)
                case .plugin: break
                }
            }
        }]
    }

    /// Waits until webrtcbin asks to negotiate, then offer → `configure` → answer.
    public func publish(video: Bool) async throws(BotError) {
        guard case .joined(let id) = state, let link else { throw .negotiation("publish before join and follow") }
        // Before the offer, so that it carries the channel's m=application section.
        openKeepalive(on: link.webrtc)
        for await _ in negotiation.stream { break }
        guard state == .joined(feedID: id) else { throw .janus(.disconnected) }
        state = .publishing(feedID: id)
        try await link.publish(video: video)
        guard state == .publishing(feedID: id) || state == .live(feedID: id) else { throw .janus(.disconnected) }
    }

    /// Janus's `media` events: not receiving (after about a second without packets) starts the
    /// media-loss timer, receiving again stops it.
    private func janusReceives(_ type: String, _ receiving: Bool) {
        guard case .live = state, let timeout = mediaLossTimeout else { return }
        mediaLossTimer?.cancel()
        mediaLossTimer = nil
        guard !receiving else { return }
        log.warning("Janus stopped receiving our \(type)")
        let sink = eventSink
        mediaLossTimer = Task {
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { sink.yield(.lost(.mediaLost)) }
        }
    }

    /// The keepalive's pings and pongs so far (nil without a keepalive channel).
    package nonisolated var keepalive: KeepaliveLedger? { keepaliveState.value }

    /// Opens the `keepalive` channel and pings on it once it is open. Its pongs can only watch
    /// the path where someone answers: through Janus's VideoRoom nobody does (measured), so
    /// there it only sends, as phones do. Without a channel (webrtcbin refused it) the
    /// publisher goes on without.
    private func openKeepalive(on webrtc: WebRTCBin) {
        guard let interval = keepaliveInterval, keepalive == nil else { return }
        let channel: DataChannel
        do { channel = try webrtc.createDataChannel(Keepalive.label) } catch {
            log.warning("no keepalive channel: \(error)")
            return
        }
        keepaliveState.value = KeepaliveLedger()
        var keepalive = Keepalive(interval: interval)
        let log = self.log, state = keepaliveState, sink = eventSink
        keepalive.observe = { ledger, activity in
            state.value = ledger
            switch activity {
            case .answered where ledger.pongs == 1:
                log.info("keepalive pings are answered: two unanswered in a row will count as a lost path")
            case .pinged where ledger.missedInARow > 0:
                log.warning("keepalive pong missed (\(ledger.missedInARow) in a row)")
            default:
                log.trace("keepalive: \(ledger.pingsSent) pings, \(ledger.pongs) pongs")
            }
        }
        tasks.append(Task { [weak self] in
            guard let loss = await keepalive.run(events: channel.events, send: { try channel.send(text: $0) }) else { return }
            guard await self?.isLive == true else { return }
            sink.yield(.lost(loss))
        })
    }

    private var isLive: Bool {
        if case .live = state { true } else { false }
    }

    private func mediaUp() {
        if case .publishing(let id) = state { state = .live(feedID: id) }
    }

    /// Leaves the room and detaches (with `announce`; without, it only stops following, for a
    /// caller about to destroy the whole session). The session stays the caller's. Safe to call
    /// more than once.
    public func leave(announce: Bool = true) async {
        guard state != .leaving, state != .left else { return }
        let joined = switch state { case .joined, .publishing, .live: true; default: false }
        state = .leaving
        mediaLossTimer?.cancel()
        for t in tasks { t.cancel() }
        tasks = []
        negotiation.continuation.finish()
        if let handle, announce {
            if joined { await VideoRoom.leave(handle) }
            await handle.detach()
        }
        state = .left
        eventSink.finish()
    }
}

/// The keepalive's latest ledger: written by its task, read by anyone.
private final class KeepaliveSnapshot: Sendable {
    private let state = Locked<KeepaliveLedger?>(nil)
    var value: KeepaliveLedger? {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}
