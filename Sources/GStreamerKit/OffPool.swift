import Dispatch

/// Runs blocking GStreamer work (state changes, teardown that joins streaming threads, file
/// opens) on a thread of its own instead of Swift's cooperative pool, which has one thread per
/// core: one stuck element there would freeze timers, signals and every other task.
public enum OffPool {
    private static let queue = DispatchQueue(label: "sfubot.gst.blocking", attributes: .concurrent)

    /// `work` on a dispatch thread; the caller's task waits without holding a pool thread.
    public static func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }

    /// `work` on a dispatch thread, not waited for (teardown from a `deinit`).
    static func later(_ work: @escaping @Sendable () -> Void) { queue.async(execute: work) }

    /// As `run`, for work that throws.
    public static func run<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await run { () -> Result<T, E> in Result { () throws(E) -> T in try work() } }
        return try result.get()
    }
}
