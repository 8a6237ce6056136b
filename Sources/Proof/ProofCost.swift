import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// CPU time the proof's own work took (hashing, signing, appending checkpoints), measured on
/// the threads it runs on (`CLOCK_THREAD_CPUTIME_ID`): each piece runs on a thread of its own,
/// so that thread's CPU time is the piece's. What a recording's proof costs, and its share of
/// the process's CPU (`getrusage`), for the recorder's last log line and `make bench-record`.
public final class ProofCost: Sendable {
    private let nanos = Atomic<UInt64>(0)

    public init() {}

    public var seconds: Double { Double(nanos.load(ordering: .relaxed)) / 1e9 }

    /// `work`, its CPU time added.
    public func measure<T>(_ work: () throws -> T) rethrows -> T {
        let start = Self.threadNanos()
        defer { nanos.add(Self.threadNanos() &- start, ordering: .relaxed) }
        return try work()
    }

    static func threadNanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// User and system CPU seconds of this whole process so far.
    public static func processSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
