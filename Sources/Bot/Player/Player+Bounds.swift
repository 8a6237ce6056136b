import FrameCrypto
import Foundation
import Synchronization
import Locking

/// The two bounds every playback has, whatever state it is in: `duration` (a hard end) and
/// `stallTimeout` (a player that sends nothing while its input has not ended stops and says so).
extension Player {
    /// How long the media path may send nothing, once up, before the player gives up.
    public static let stallTimeout: Duration = .seconds(5)
    /// Beyond `duration`, the most a player may take to join and bring its media path up (both
    /// well under 1 s here); the play itself still lasts `duration` from the first publish.
    public static let joinAllowance: Duration = .seconds(2)

    /// Joins, publishes, plays and leaves. A publisher Janus loses (its session, its media
    /// path) comes back within `config.rejoinTimeout` under the same display and, where Janus
    /// allows, the same id, and a file goes on from where it was.
    ///
    /// With `duration`, the player is gone by `duration + joinAllowance` after this call,
    /// whatever it was doing (joining, waiting for the media path, rejoining, stalled): a run
    /// cut there that sent frames reports them; one that sent nothing fails (`stalled`).
    public func run() async throws(BotError) -> Report {
        try await config.withTLSBridges { config throws(BotError) in
            var bridged = self
            bridged.config = config
            return try await bridged.runBounded()
        }
    }

    /// `run` with `config`'s `turns:` bridges open.
    private func runBounded() async throws(BotError) -> Report {
        let progress = Progress()
        guard let duration else { return try await play(progress) }
        let hardEnd = ContinuousClock.now + duration + Self.joinAllowance
        let cut = Flag()
        let result: Result<Report, BotError> = await withTaskGroup(of: Result<Report, BotError>?.self) { group in
            group.addTask { () async -> Result<Report, BotError>? in
                do throws(BotError) { return .success(try await play(progress)) } catch { return .failure(error) }
            }
            group.addTask {
                do { try await Task.sleep(until: hardEnd) } catch { return nil }
                cut.set()
                return nil
            }
            // The timer's end cancels the play, which leaves as a Ctrl-C would; its result is kept.
            while let next = await group.next() {
                if let result = next { group.cancelAll(); return result }
                if cut.isSet { group.cancelAll() }
            }
            return .failure(.stopped)
        }
        let phase = status.snapshot.phase
        switch result {
        case .success(let report):
            if cut.isSet, report.framesSent <= 0, report.videoFramesSent <= 0 {
                throw .stalled("nothing was sent within --duration \(duration.seconds) s (\(phase.rawValue))")
            }
            return report
        case .failure(let error):
            guard cut.isSet, !Task.isCancelled else { throw error }
            // Cut while joining or rejoining: what left before counts.
            let report = progress.report(audio: stats.snapshot, video: videoStats.snapshot)
            if report.framesSent > 0 || report.videoFramesSent > 0 { return report }
            throw .stalled("nothing was sent within --duration \(duration.seconds) s (still \(phase.rawValue))")
        }
    }

    /// Watches what leaves once the media path is up: nothing sealed for `stallTimeout` while
    /// the input has not ended is a stall, said through `onStall` with where the file stopped.
    func watchForStall(_ mediaUp: Flag, position: MediaTimes, onStall: @escaping @Sendable (BotError) -> Void) -> Task<Void, Never> {
        let stats = self.stats, videoStats = self.videoStats, source = self.source, pauses = self.pauses
        // A live input that sends nothing has dropped or left: it is waited out in the room.
        if live != nil { return Task {} }
        return Task {
            var last = -1, since = ContinuousClock.now
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(500))
                let sealed = stats.snapshot.sealed + videoStats.snapshot.sealed
                // Paused is not stalled: nothing is meant to be sent.
                guard mediaUp.isSet, sealed == last, !pauses.isPaused else {
                    last = sealed
                    since = .now
                    continue
                }
                guard ContinuousClock.now - since >= Self.stallTimeout else { continue }
                let input = if case .file(let file) = source { file } else { "the test pattern" }
                let at = position.last.map { String(format: " at %.1f s", $0) } ?? ""
                onStall(.stalled("nothing sent for \(Self.stallTimeout.seconds) s though \(input) had not ended (stopped\(at))"))
                return
            }
        }
    }

    /// What a run has done so far, kept outside the play so a run cut short can still report.
    final class Progress: Sendable {
        private struct State { var publisherID: Int64 = 0, dropped = (audio: 0, video: 0), rejoins = 0 }
        private let state = Locked(State())
        let started = Date()

        func joined(_ id: Int64) { state.withLock { $0.publisherID = id } }
        func dropped(audio: Int, video: Int, rejoins: Int) { state.withLock { $0.dropped = (audio, video); $0.rejoins = rejoins } }

        func report(audio: FrameStats.Snapshot, video: FrameStats.Snapshot) -> Report {
            let s = state.withLock { $0 }
            return Report(frames: audio, framesSent: audio.sealed - s.dropped.audio, videoFrames: video,
                          videoFramesSent: video.sealed - s.dropped.video, seconds: Date().timeIntervalSince(started),
                          publisherID: s.publisherID, rejoins: s.rejoins)
        }
    }
}

/// A one-way switch shared between tasks.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}
