import Synchronization

/// Finishing files is the stop: an end-of-stream waited for, a remux, a read-back. None of it
/// may be cut short by the cancellation that asked for the stop (a cancelled task's waits
/// return at once, and a muxer that never got its end-of-stream leaves a file without an index,
/// or nothing). So each finishing step runs in a task of its own that nobody cancels.
public enum Finishing {
    private static let active = Atomic<Int>(0)

    /// Whether some recording is finishing its files now (a stop's deadline waits for it).
    public static var inProgress: Bool { active.load(ordering: .relaxed) > 0 }

    /// Runs `body` to its end, whatever happens to the calling task.
    static func run<T: Sendable>(_ body: @escaping @Sendable () async -> T) async -> T {
        active.add(1, ordering: .relaxed)
        defer { active.subtract(1, ordering: .relaxed) }
        return await Task { await body() }.value
    }
}
