public import Foundation
import Synchronization
import Locking

/// The live progress line: redrawn in place once a second on a terminal, a plain line every
/// ten seconds otherwise (logs, CI).
public final class LiveDisplay: Sendable {
    private let terminal: Bool
    private let lastPlain = Locked(Date.distantPast)

    public init(terminal: Bool = isatty(STDERR_FILENO) != 0) { self.terminal = terminal }

    public func show(_ f: LiveFigures) {
        let line = Self.line(f)
        if terminal {
            FileHandle.standardError.write(Data("\r\u{1B}[K\(line)".utf8))
        } else if lastPlain.withLock({ last in
            guard Date().timeIntervalSince(last) >= 10 else { return false }
            last = Date()
            return true
        }) {
            FileHandle.standardError.write(Data("\(line)\n".utf8))
        }
    }

    /// Ends the in-place line so what follows starts on its own.
    public func finish() { if terminal { FileHandle.standardError.write(Data("\n".utf8)) } }

    static func line(_ f: LiveFigures) -> String {
        let s = f.sample
        let loss = s.lossPercent.map { String(format: "%.2f%%", $0) } ?? "–"
        return String(format: "[%@ %3.0fs] bots %d/%d joined, %d failed, %d retries | out %.2f in %.2f Mbit/s | loss %@ | decrypt failures %d | CPU %.2f cores | RSS %.0f MB",
                      f.phase, s.t, s.publishersJoined + s.subscribersJoined, f.planned, s.failed, f.retries,
                      s.mbpsOut, s.mbpsIn, loss, s.decryptFailures, s.cpuCores, s.rssMB)
    }
}
