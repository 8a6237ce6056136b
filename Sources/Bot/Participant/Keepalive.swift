import Foundation
package import GStreamerKit
import Synchronization
import Locking

/// The bookkeeping of ECall's data-channel keepalive (ECALL-WIRE §6): one `ping:<epoch>` per
/// interval, each answered by `pong:<same>`. Pure: the caller says what was sent and heard, and
/// when, so it is tested with no clock and no network.
///
/// A ping still unanswered when the next one is due is a missed pong. Misses count only once
/// the peer has answered at least once: through Janus's VideoRoom no pong ever comes back
/// (measured: docs/architecture.md, "Keepalive data channel"), and a path that never answered
/// says nothing about loss. Two misses in a row on a peer that did answer mean the path is lost.
package struct KeepaliveLedger: Sendable, Equatable {
    package private(set) var pingsSent = 0
    package private(set) var pongs = 0
    /// Pongs that matched no ping still waiting (late, or not ours).
    package private(set) var unmatchedPongs = 0
    /// Missed pongs since the first pong.
    package private(set) var missed = 0
    package private(set) var missedInARow = 0
    /// The last ping's payload (after `ping:`), until its pong.
    private var waiting: String?

    package init() {}

    /// Whether misses count: the peer has answered a ping.
    package var armed: Bool { pongs > 0 }
    /// Two missed pongs in a row on a peer that answers.
    package var lost: Bool { armed && missedInARow >= 2 }

    /// The text of the ping due at `epochSeconds` (Unix time, as phones send it: fractional
    /// seconds, which also keeps apart pings that leave within one second), or nil once the path
    /// is lost. The ping before it, if still unanswered, becomes a missed pong.
    package mutating func nextPing(epochSeconds: Double) -> String? {
        if waiting != nil, armed {
            missed += 1
            missedInARow += 1
        }
        waiting = nil
        guard !lost else { return nil }
        let payload = String(format: "%.3f", epochSeconds)
        waiting = payload
        pingsSent += 1
        return "ping:" + payload
    }

    /// A text heard on the channel; true if it answered the ping waiting.
    @discardableResult
    package mutating func heard(_ text: String) -> Bool {
        guard text.hasPrefix("pong:") else { return false }
        guard let waiting, text.dropFirst(5) == waiting else {
            unmatchedPongs += 1
            return false
        }
        self.waiting = nil
        pongs += 1
        missedInARow = 0
        return true
    }
}

/// Runs the keepalive on one data channel: pings every `interval` from the moment the channel
/// opens, reads its texts for pongs, and returns `.keepaliveLost` when the ledger says the path
/// is lost; nil when the channel closes or the task is cancelled.
package struct Keepalive: Sendable {
    /// The channel's label, as ECall phones name it.
    package static let label = "keepalive"
    /// What just happened, for `observe`.
    package enum Activity: Sendable { case pinged, answered }

    package let interval: Duration
    /// Unix time in seconds, for the ping texts.
    package var now: @Sendable () -> Double = { Date().timeIntervalSince1970 }
    /// Called after each ping and each matched pong, with the ledger as it stands (logs, counters).
    package var observe: @Sendable (KeepaliveLedger, Activity) -> Void = { _, _ in }

    package init(interval: Duration) {
        self.interval = interval
    }

    /// `events`: the channel's events (`DataChannel.events`); `send` sends one text on it.
    package func run(events: AsyncStream<DataChannel.Event>, send: @escaping @Sendable (String) throws -> Void) async -> PeerLoss? {
        let ledger = LedgerBox()
        let (opened, open) = AsyncStream.makeStream(of: Void.self)
        let interval = self.interval, now = self.now, observe = self.observe
        return await withTaskGroup(of: PeerLoss?.self) { group in
            group.addTask {
                for await event in events {
                    switch event {
                    case .open: open.yield()
                    case .text(let text): if ledger.update({ $0.heard(text) }) { observe(ledger.value, .answered) }
                    case .failed, .closed: break
                    }
                }
                return nil  // closed: nothing more to ping on
            }
            group.addTask {
                for await _ in opened { break }
                while !Task.isCancelled {
                    guard let text = ledger.update({ $0.nextPing(epochSeconds: now()) }) else { return .keepaliveLost }
                    // A send that fails (the channel closing) is a ping that will go unanswered.
                    try? send(text)
                    observe(ledger.value, .pinged)
                    try? await Task.sleep(for: interval)
                }
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            open.finish()
            return first
        }
    }

    /// The ledger shared by the reading and the pinging task.
    private final class LedgerBox: Sendable {
        private let state = Locked(KeepaliveLedger())
        var value: KeepaliveLedger { state.withLock { $0 } }
        func update<T: Sendable>(_ body: (inout KeepaliveLedger) -> T) -> T { state.withLock { body(&$0) } }
    }
}
