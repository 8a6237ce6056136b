import Foundation
import Locking
import Synchronization

/// `relay --to-room`: one participant of a room, opened with that room's key on a session of its
/// own (`RelayRoom`), as a `.live` player's input in another room. Their Opus and H.264 go on as
/// they came (never decoded), to be sealed again with the other room's key and frame format.
/// The participant leaving and coming back goes on in the same publisher, which stays in its
/// room sending nothing meanwhile.
public final class RoomInput: LiveInput, RelayFrameSink {
    /// The room the participant is in: its Janus, room and key (`protection`).
    public let config: BotConfig
    public let participant: String
    /// The subscribing side: waiting, sending, its rejoins.
    public let status = RelayStatus()
    let sink = LiveSink()
    let keyFrames = Locked<KeyFrameRequests?>(nil)
    /// The bridge's pause: while paused, frames are held back (counted, not sent) and the
    /// publisher in the other room stays, silent; at resume video goes on at a keyframe.
    let pauses: RecordingPauses
    /// Frames held back while paused.
    let held = Counter()
    private let resumeAtKeyFrame = Atomic<Bool>(false)
    private let shared = Locked(Shared())

    private struct Shared {
        var tracks: RelayTracks?
        var lastFrame: ContinuousClock.Instant?
        var backAt: ContinuousClock.Instant?
        var task: Task<Void, Never>?
        var failure: BotError?
        var report: Relay.Report?
    }

    /// A frame after this much silence is the participant back.
    static let away: Duration = .seconds(1)

    /// Called once, at the first frame taken by the publisher in the other room (a bridge's
    /// `sending`: media reaches that room, not only the first room's roster joined).
    private let firstSent: (@Sendable () -> Void)?
    private let sentOnce = Atomic<Bool>(false)

    public init(config: BotConfig, participant: String, pauses: RecordingPauses = RecordingPauses(), firstSent: (@Sendable () -> Void)? = nil) {
        self.config = config
        self.participant = participant
        self.pauses = pauses
        self.firstSent = firstSent
    }

    var audioIsOpus: Bool { true }
    var hasVideo: Bool { shared.withLock { $0.tracks?.video ?? false } }
    var shown: String { "participant \(participant) of room \(config.room)" }

    /// What the subscribing side did, once it has ended.
    public var report: Relay.Report? { shared.withLock { $0.report } }

    func start(_ setup: LiveSource.Setup) async throws(BotError) {
        let room = RelayRoom(config: config, target: .sink(self, tracks: { [weak self] t in self?.shared.withLock { $0.tracks = t } }),
                             participant: participant, status: status, pauses: RecordingPauses())
        let task = Task { [weak self] in
            do {
                let report = try await room.run(for: nil)
                self?.shared.withLock { $0.report = report }
            } catch { self?.shared.withLock { $0.failure = BotError(error) } }
        }
        shared.withLock { $0.task = task }
        // Joined once the participant's first audio opened (an ECall room needs audio).
        while true {
            do { try await Task.sleep(for: .milliseconds(100)) } catch { throw .stopped }
            let (failure, tracks, first) = shared.withLock { ($0.failure, $0.tracks, $0.lastFrame) }
            if let failure { throw failure }
            guard let tracks, first != nil else { continue }
            if !tracks.audio { throw .unplayable(shown, "publishes no audio (ECall calls need audio)") }
            return
        }
    }

    func stop() async {
        let task = shared.withLock { $0.task }
        task?.cancel()
        await task?.value
        sink.detach()
    }

    func requestKeyFrame() { keyFrames.withLock { $0 }?.request() }

    func explainsSilence(window: Duration) -> Bool {
        if pauses.isPaused { return true }
        return shared.withLock { s in
            guard let last = s.lastFrame, ContinuousClock.now - last < Self.away else { return true }
            return s.backAt.map { ContinuousClock.now - $0 < window } ?? false
        }
    }

    // MARK: - Frames (the subscribing branches' streaming threads)

    func pushAudio(_ frame: UnsafeRawBufferPointer) {
        arrived()
        if heldBack() { return }
        // A load per frame; the exchange only until the first frame went (50 frames a second).
        if sink.push(frame, running: nil, key: true, video: false), !sentOnce.load(ordering: .relaxed),
           !sentOnce.exchange(true, ordering: .relaxed) { firstSent?() }
    }

    func pushVideo(_ au: UnsafeRawBufferPointer, isKey: Bool) -> RelayGraph.PushResult {
        arrived()
        if heldBack() {
            resumeAtKeyFrame.store(true, ordering: .relaxed)
            return .refused
        }
        // Resumed: nothing until a keyframe (`.waitingForKeyFrame` makes the input ask for one).
        if resumeAtKeyFrame.load(ordering: .relaxed) {
            guard isKey else { return .waitingForKeyFrame }
            resumeAtKeyFrame.store(false, ordering: .relaxed)
        }
        if sink.push(au, running: nil, key: isKey, video: true) { return .sent }
        // Not taken: the publisher waits for a keyframe (asked for), or is not there yet.
        return isKey ? .refused : .waitingForKeyFrame
    }

    /// Paused: the frame is counted and not sent.
    private func heldBack() -> Bool {
        guard pauses.isPaused else { return false }
        held.increment()
        return true
    }

    private func arrived() {
        let now = ContinuousClock.now
        shared.withLock { s in
            if let last = s.lastFrame, now - last >= Self.away { s.backAt = now }
            s.lastFrame = now
        }
    }
}
