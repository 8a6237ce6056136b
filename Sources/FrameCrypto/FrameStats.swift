import Synchronization

/// Per-stream frame counters, bumped from GStreamer streaming threads without locks.
public final class FrameStats: Sendable {
    private let sealedCount = Atomic<Int>(0)
    private let sealFailureCount = Atomic<Int>(0)
    private let receivedCount = Atomic<Int>(0)
    private let openedCount = Atomic<Int>(0)
    private let noMarker = Atomic<Int>(0)
    private let tooShort = Atomic<Int>(0)
    private let noKey = Atomic<Int>(0)
    private let malformed = Atomic<Int>(0)
    private let missingKey = Atomic<Int>(0)
    private let unencrypted = Atomic<Int>(0)
    private let replayed = Atomic<Int>(0)

    public init() {}

    public func sealed() { sealedCount.add(1, ordering: .relaxed) }
    public func sealFailed() { sealFailureCount.add(1, ordering: .relaxed) }
    public func received() { receivedCount.add(1, ordering: .relaxed) }
    public func opened() { openedCount.add(1, ordering: .relaxed) }
    public func dropped(_ reason: DropReason) {
        switch reason {
        case .noMarker: noMarker.add(1, ordering: .relaxed)
        case .tooShort: tooShort.add(1, ordering: .relaxed)
        case .noKey: noKey.add(1, ordering: .relaxed)
        case .malformed: malformed.add(1, ordering: .relaxed)
        case .missingKey: missingKey.add(1, ordering: .relaxed)
        case .unencrypted: unencrypted.add(1, ordering: .relaxed)
        case .replayed: replayed.add(1, ordering: .relaxed)
        }
    }

    public var snapshot: Snapshot {
        Snapshot(
            sealed: sealedCount.load(ordering: .relaxed),
            sealFailed: sealFailureCount.load(ordering: .relaxed),
            received: receivedCount.load(ordering: .relaxed),
            opened: openedCount.load(ordering: .relaxed),
            dropped: [
                DropReason.noMarker.rawValue: noMarker.load(ordering: .relaxed),
                DropReason.tooShort.rawValue: tooShort.load(ordering: .relaxed),
                DropReason.noKey.rawValue: noKey.load(ordering: .relaxed),
                DropReason.malformed.rawValue: malformed.load(ordering: .relaxed),
                DropReason.missingKey.rawValue: missingKey.load(ordering: .relaxed),
                DropReason.unencrypted.rawValue: unencrypted.load(ordering: .relaxed),
                DropReason.replayed.rawValue: replayed.load(ordering: .relaxed),
            ])
    }

    public struct Snapshot: Sendable, Codable, Equatable {
        public var sealed: Int
        public var sealFailed: Int
        public var received: Int
        public var opened: Int
        /// Keyed by `DropReason.rawValue`.
        public var dropped: [String: Int]

        enum CodingKeys: String, CodingKey {
            case sealed, sealFailed = "seal_failed", received, opened, dropped
        }

        public var droppedTotal: Int { dropped.values.reduce(0, +) }

        public static func + (a: Snapshot, b: Snapshot) -> Snapshot {
            Snapshot(
                sealed: a.sealed + b.sealed, sealFailed: a.sealFailed + b.sealFailed,
                received: a.received + b.received, opened: a.opened + b.opened,
                dropped: a.dropped.merging(b.dropped, uniquingKeysWith: +))
        }
        /// What was counted between `b` and `a` (b taken earlier).
        public static func - (a: Snapshot, b: Snapshot) -> Snapshot {
            Snapshot(
                sealed: a.sealed - b.sealed, sealFailed: a.sealFailed - b.sealFailed,
                received: a.received - b.received, opened: a.opened - b.opened,
                dropped: a.dropped.merging(b.dropped.mapValues { -$0 }, uniquingKeysWith: +))
        }
        public static let zero = Snapshot(sealed: 0, sealFailed: 0, received: 0, opened: 0, dropped: [:])
    }
}
