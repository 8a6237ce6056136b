import Locking
import Synchronization

/// A chain's newest checkpoint: its number, hash and time. A serve instance publishes it with
/// each lease renewal, so that the instance taking a recording over links its first checkpoint
/// to it, whichever disk the earlier owner's `proof.jsonl` is on (docs/proof.md, failover).
public struct ChainLink: Codable, Sendable, Equatable {
    public var checkpoint: Int
    public var hash: String
    public var time: String?

    public init(checkpoint: Int, hash: String, time: String?) {
        self.checkpoint = checkpoint
        self.hash = hash
        self.time = time
    }
}

/// A recording taken over from another instance: named by the first checkpoint written.
public struct ChainTakeover: Sendable, Equatable {
    /// `failover` (the owner's lease ran out) or `released` (it shut down).
    public var cause: String
    /// The earlier owner, when known.
    public var from: String?
    /// Its last published checkpoint; nil if it published none.
    public var link: ChainLink?

    public init(cause: String, from: String?, link: ChainLink?) {
        self.cause = cause
        self.from = from
        self.link = link
    }
}

/// Where a running recording's chain is now, read by whoever publishes it (the lease renewal).
public final class ChainHead: Sendable {
    private let value = Locked<ChainLink?>(nil)

    public init() {}

    public var link: ChainLink? { value.withLock { $0 } }

    func set(_ link: ChainLink?) { value.withLock { $0 = link } }
}
