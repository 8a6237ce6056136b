import Locking
import Synchronization

/// Counters shared between a queue and the closures it hands its runner (a class, so a closure
/// made before the queue is fully initialised can hold it; `Locked` itself cannot be copied).
public final class Tally<Value: Sendable>: Sendable {
    private let state: Locked<Value>
    public init(_ value: Value) { state = Locked(value) }
    public func update<R>(_ body: (inout Value) -> R) -> R { state.withLock { body(&$0) } }
    public var value: Value { state.withLock { $0 } }
}
