public import GStreamerKit
public import Janus
public import Logging

/// A multistream VideoRoom subscription: one handle and one PeerConnection carry every feed.
/// Feeds are added and removed as the roster changes (`subscribe`/`unsubscribe`); every offer
/// Janus sends, asked for or not (`updated`), is answered. The one copy of this logic: the
/// recorder and the load test's subscriber bots both use it.
///
/// Operations run one at a time, in the order they were asked for: a feed added while the
/// first join is still in flight waits for it and becomes an update, never a second join.
public actor Subscription {
    public enum State: Sendable, Equatable { case idle, joining, joined, leaving, left }

    public enum Event: Sendable {
        case ice(String)
        /// webrtcbin's connection state (`connected`: ICE and DTLS done).
        case connection(String)
        case lost(PeerLoss)
    }

    /// Called inside each negotiation: `streams` before the answer (webrtcbin adds pads for new
    /// mids while it answers), `negotiated` after it, `failed` instead when Janus's offer could
    /// not be answered (the PeerConnection no longer follows the subscription: replace it);
    /// `attached` once the handle is attached.
    public struct Hooks: Sendable {
        public var streams: @Sendable ([SubscribedStream]) -> Void
        public var negotiated: @Sendable () -> Void
        /// nil: the subscription logs the failure itself.
        public var failed: (@Sendable (BotError) -> Void)?
        public var attached: @Sendable () -> Void
        public init(streams: @escaping @Sendable ([SubscribedStream]) -> Void, negotiated: @escaping @Sendable () -> Void = {},
                    failed: (@Sendable (BotError) -> Void)? = nil, attached: @escaping @Sendable () -> Void = {}) {
            self.streams = streams
            self.negotiated = negotiated
            self.failed = failed
            self.attached = attached
        }
    }

    public private(set) var state = State.idle
    /// Feeds asked for and not removed.
    public private(set) var feeds: Set<Int64> = []
    /// ICE states and loss; ends at `leave`.
    public nonisolated let events: AsyncStream<Event>
    private let eventSink: AsyncStream<Event>.Continuation
    private let session: JanusSession
    private let room: Int64
    private let privateID: Int64?
    private let webrtc: WebRTCBin
    private let hooks: Hooks
    private let log: Logger
    private var handle: JanusHandle?
    private var link: PeerLink?
    private var tasks: [Task<Void, Never>] = []
    /// The last operation asked for: the next one waits for it.
    private var tail: Task<Void, Never>?

    public init(session: JanusSession, room: Int64, privateID: Int64?, webrtc: WebRTCBin, logger: Logger, hooks: Hooks) {
        self.session = session
        self.room = room
        self.privateID = privateID
        self.webrtc = webrtc
        self.hooks = hooks
        log = logger
        (events, eventSink) = AsyncStream.makeStream(of: Event.self)
    }

    /// Subscribes to `feeds` as well: the first call joins, later ones update.
    public func add(_ feeds: [Int64]) async throws(BotError) {
        let new = feeds.filter { !self.feeds.contains($0) }
        guard !new.isEmpty else { return }
        self.feeds.formUnion(new)
        try await serially { (s: Subscription) async throws(BotError) in try await s.addNow(new) }
    }

    /// Drops `feeds` from the subscription (`unsubscribe`).
    public func remove(_ feeds: [Int64]) async throws(BotError) {
        let gone = feeds.filter { self.feeds.contains($0) }
        guard !gone.isEmpty else { return }
        self.feeds.subtract(gone)
        try await serially { (s: Subscription) async throws(BotError) in try await s.removeNow(gone) }
    }

    /// Feeds Janus already dropped (their publisher left): no request, but a publisher who
    /// comes back under the same id is added again.
    public func forget(_ feeds: [Int64]) {
        self.feeds.subtract(feeds)
    }

    /// Runs `operation` after every operation asked for before it.
    private func serially(_ operation: @escaping @Sendable (Subscription) async throws(BotError) -> Void) async throws(BotError) {
        let previous = tail
        let task = Task<Void, any Error> {
            await previous?.value
            try await operation(self)
        }
        tail = Task { _ = try? await task.value }
        do { try await task.value } catch { throw BotError(error) }
    }

    private func addNow(_ new: [Int64]) async throws(BotError) {
        switch state {
        case .joined:
            guard let handle else { return }
            let update: (streams: [SubscribedStream], offer: JSEP?)
            do { update = try await VideoRoom.add(handle, feeds: new) } catch { throw .janus(error) }
            // `leave()` may have run meanwhile: its PeerConnection is being taken down.
            guard state == .joined else { throw .janus(.disconnected) }
            if let offer = update.offer { try await negotiate(update.streams, offer: offer) }
        case .idle:
            try await join(new)
        case .joining, .leaving, .left:
            throw .janus(.disconnected)
        }
    }

    private func removeNow(_ gone: [Int64]) async throws(BotError) {
        guard state == .joined, let handle else { return }
        let update: (streams: [SubscribedStream], offer: JSEP?)
        do { update = try await VideoRoom.remove(handle, feeds: gone) } catch { throw .janus(error) }
        guard state == .joined else { return }
        if let offer = update.offer { try await negotiate(update.streams, offer: offer) }
    }

    /// Attach, `join` as a subscriber to the first feeds, answer.
    private func join(_ first: [Int64]) async throws(BotError) {
        state = .joining
        let handle: JanusHandle
        do { handle = try await session.attach(plugin: VideoRoom.plugin) } catch {
            if state == .joining { state = .idle }
            throw .janus(error)
        }
        guard state == .joining else {
            await handle.detach()
            throw .janus(.disconnected)
        }
        self.handle = handle
        hooks.attached()
        let link = PeerLink(webrtc: webrtc, handle: handle, logger: log)
        self.link = link
        startFollowing(link)
        let joined: (streams: [SubscribedStream], offer: JSEP)
        do { joined = try await VideoRoom.subscribe(handle, room: room, feeds: first, privateID: privateID) } catch {
            if state == .joining { state = .idle }
            throw .janus(error)
        }
        guard state == .joining else { throw .janus(.disconnected) }
        state = .joined
        try await negotiate(joined.streams, offer: joined.offer)
    }

    private func startFollowing(_ link: PeerLink) {
        let (peer, peerTasks) = link.follow()
        let sink = eventSink, log = self.log, reported = hooks.failed != nil
        tasks = peerTasks + [Task { [weak self] in
            for await event in peer {
                switch event {
                case .ice(let s): sink.yield(.ice(s))
                case .connection(let s): sink.yield(.connection(s))
                case .lost(let why): sink.yield(.lost(why))
                case .plugin(.updated(let streams, let offer?)):
                    // Janus renegotiates by itself (a publisher left, a stream changed).
                    do { try await self?.serially { (s: Subscription) async throws(BotError) in try await s.negotiateIfJoined(streams, offer: offer) } } catch {
                        // Once: the owner's `failed` hook reports it when there is one.
                        if reported { log.debug("renegotiation failed: \(error)") } else { log.error("renegotiation failed: \(error)") }
                    }
                case .negotiationNeeded, .mediaUp, .plugin, .receiving: break
                }
            }
        }]
    }

    private func negotiateIfJoined(_ streams: [SubscribedStream], offer: JSEP) async throws(BotError) {
        guard state == .joined else { return }
        try await negotiate(streams, offer: offer)
    }

    /// Janus's offer for the current streams → answer → `start`.
    private func negotiate(_ streams: [SubscribedStream], offer: JSEP) async throws(BotError) {
        guard let link else { return }
        hooks.streams(streams)
        do { try await link.answer(offer) } catch {
            // Not after `leave`: a PeerConnection taken down meanwhile failing says nothing.
            if state == .joined || state == .joining { hooks.failed?(error) }
            throw error
        }
        hooks.negotiated()
    }

    /// Asks Janus for a keyframe of the feed on `mid` (`VideoRoom.requestKeyFrame`), beside any
    /// negotiation in flight (not queued behind it: the point is to be quick); false when not
    /// joined or Janus refused (a mid it does not know yet).
    @discardableResult
    public func requestKeyFrame(mid: String) async -> Bool {
        guard state == .joined, let handle else { return false }
        do { try await VideoRoom.requestKeyFrame(handle, mid: mid) } catch {
            log.debug("keyframe request for mid \(mid) refused: \(error)")
            return false
        }
        return true
    }

    /// Detaches the handle (with `announce`; without, it only stops, for a caller about to
    /// destroy the whole session). Safe to call more than once.
    public func leave(announce: Bool = true) async {
        guard state != .leaving, state != .left else { return }
        state = .leaving
        tail?.cancel()
        for t in tasks { t.cancel() }
        tasks = []
        if let handle, announce { await handle.detach() }
        state = .left
        eventSink.finish()
    }
}
