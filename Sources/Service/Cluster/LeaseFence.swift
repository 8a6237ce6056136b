/// When an instance must stop writing a job whose lease it can no longer renew, by its own
/// monotonic clock. The database sets `lease_until = now() + lease` while it runs a renewal,
/// which is after the instance sent it; so `sent + lease` is never later than the lease's end
/// as the other instances see it, whatever the two wall clocks say. The job is stopped at
/// `sent + lease - margin`: the margin is the time its files take to finish (end-of-stream,
/// the manifest), which must be over before anybody else may take the job. No I/O, no clock of
/// its own: the caller passes `now`, so tests drive it.
public struct LeaseFence<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    public let lease: Duration
    public let margin: Duration
    private var renewed: [String: Instant] = [:]

    public init(lease: Duration, margin: Duration) {
        precondition(margin < lease, "the margin must leave part of the lease")
        self.lease = lease
        self.margin = margin
    }

    /// A renewal (or the claim) of `id` sent at `sent` succeeded.
    public mutating func renewed(_ id: String, sentAt sent: Instant) {
        if let last = renewed[id], last > sent { return }
        renewed[id] = sent
    }

    public mutating func forget(_ id: String) { renewed[id] = nil }

    /// The moment `id` must stop writing, if it is held.
    public func deadline(_ id: String) -> Instant? { renewed[id].map { $0.advanced(by: lease - margin) } }

    /// The jobs past their deadline at `now`, forgotten as they are returned.
    public mutating func due(at now: Instant) -> [String] {
        let due = renewed.filter { $0.value.advanced(by: lease - margin) <= now }.map(\.key).sorted()
        for id in due { renewed[id] = nil }
        return due
    }

    public var held: [String] { renewed.keys.sorted() }
}
