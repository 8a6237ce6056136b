import FrameCrypto
import Synchronization
import Locking

/// Hands the first acceptable `participant_accept_rejoin` key to the rejoin waiting for it.
/// Open only between a `request-rejoin` and its answer or timeout: an accept outside it is
/// not taken, and of several accepts (every connected participant answers) only the first is.
final class AcceptWindow: Sendable {
    private let waiting = Locked<AsyncStream<CallKey>.Continuation?>(nil)

    /// Opens the window (closing any earlier one) and returns where its key will come: one
    /// key, or the end of the stream when the window is closed without one.
    func open() -> AsyncStream<CallKey> {
        let (keys, continuation) = AsyncStream.makeStream(of: CallKey.self, bufferingPolicy: .bufferingNewest(1))
        waiting.withLock { w in
            w?.finish()
            w = continuation
        }
        return keys
    }

    var isOpen: Bool { waiting.withLock { $0 != nil } }

    /// Gives `key` to the waiting rejoin and closes the window. False if it was not open (no
    /// rejoin waits, or another accept came first).
    func offer(_ key: CallKey) -> Bool {
        guard let w = waiting.withLock({ w in defer { w = nil }; return w }) else { return false }
        w.yield(key)
        w.finish()
        return true
    }

    func close() {
        waiting.withLock { w in defer { w = nil }; return w }?.finish()
    }

    /// The key of `keys` if it comes within `timeout`; nil on timeout, or when the window was
    /// closed or the task cancelled.
    static func first(of keys: AsyncStream<CallKey>, within timeout: Duration) async -> CallKey? {
        await withTaskGroup(of: CallKey?.self) { group in
            group.addTask { for await key in keys { return key }; return nil }
            group.addTask { try? await Task.sleep(for: timeout); return nil }
            defer { group.cancelAll() }
            return await group.next() ?? nil
        }
    }
}
