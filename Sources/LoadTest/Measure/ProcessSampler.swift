public import Foundation

/// CPU time and resident memory of this process, read from /proc (Linux), for the load test's
/// CPU/RSS over time.
public struct ProcessSample: Sendable, Equatable {
    /// User + system CPU time, seconds.
    public var cpuSeconds: Double
    /// The system (kernel) part of `cpuSeconds`: on loopback, sending a packet also delivers it
    /// into Janus's socket, so this is where the send path's floor shows.
    public var kernelSeconds: Double = 0
    /// Resident set size, bytes.
    public var residentBytes: Int
    public var threads: Int
    public var time: Date

    /// Reads /proc/self/stat (utime, stime, num_threads) and /proc/self/statm (resident pages).
    public static func now() -> ProcessSample? {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
              let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        return parse(stat: stat, statm: statm, ticksPerSecond: Double(sysconf(Int32(_SC_CLK_TCK))), pageSize: Int(sysconf(Int32(_SC_PAGESIZE))))
    }

    /// The fields after the command name (which may hold spaces and parentheses): stat(5)
    /// counts them from 1 = pid, so after ")" field 3 is first; utime is 14, stime 15, threads 20.
    static func parse(stat: String, statm: String, ticksPerSecond: Double, pageSize: Int, time: Date = Date()) -> ProcessSample? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 17, let utime = Double(fields[11]), let stime = Double(fields[12]), let threads = Int(fields[17]) else { return nil }
        let m = statm.split(separator: " ")
        guard m.count > 1, let resident = Int(m[1]) else { return nil }
        return ProcessSample(cpuSeconds: (utime + stime) / ticksPerSecond, kernelSeconds: stime / ticksPerSecond,
                             residentBytes: resident * pageSize, threads: threads, time: time)
    }

    /// CPU cores used between two samples (1.0 = one core busy).
    public static func cores(from a: ProcessSample, to b: ProcessSample) -> Double {
        let wall = b.time.timeIntervalSince(a.time)
        return wall > 0 ? (b.cpuSeconds - a.cpuSeconds) / wall : 0
    }
}
