public import Dispatch

/// Runs blocking work (GStreamer state changes and teardown that joins streaming threads, file
/// opens, reads and syncs) on a dispatch thread instead of Swift's cooperative pool, which has
/// one thread per core: one stuck element or hung file system there would freeze timers,
/// signals and every other task. The one way the project leaves the pool.
public enum OffPool {
    private static let queue = DispatchQueue(label: "sfubot.blocking", attributes: .concurrent)

    /// `work` on a dispatch thread; the caller's task waits without holding a pool thread.
    public static func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await run(on: queue, work)
    }

    /// As `run`, on `queue`: a serial one keeps its work in order (a file's writes, reloads).
    public static func run<T: Sendable>(on queue: DispatchQueue, _ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }

    /// `work` on a dispatch thread, not waited for (teardown from a `deinit`).
    public static func later(_ work: @escaping @Sendable () -> Void) { queue.async(execute: work) }

    /// As `run`, for work that throws.
    public static func run<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        try await run(on: queue, work)
    }

    /// As `run(on:)`, for work that throws.
    public static func run<T: Sendable, E: Error>(on queue: DispatchQueue, _ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await run(on: queue) { () -> Result<T, E> in Result { () throws(E) -> T in try work() } }
        return try result.get()
    }
}
