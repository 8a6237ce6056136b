import Bot
import Dispatch
import Foundation
import Logging
import Synchronization
import Locking

/// The end of a shutdown that cannot end by itself: a job stuck in a GStreamer element that
/// never returns (a teardown joining a streaming thread) holds its task, and the service group
/// waits for every task. `deadline` after the first SIGTERM or SIGINT the process exits, so an
/// operator's stop always ends; while a recording's files are being finished (`Finishing`) it
/// waits longer, up to `finishingLimit`, since finishing them is the stop. What was finished
/// stays as it is; a job cut off keeps no outcome in the state folder and is resumed at the next
/// start.
final class HardDeadline {
    private let sources: [any DispatchSourceSignal]

    init(deadline: Duration, finishingLimit: Duration = .seconds(120), log: Logger) {
        let armed = Armed()
        sources = [SIGTERM, SIGINT].map { sig in
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler {
                guard armed.arm() else { return }
                let start = ContinuousClock.now
                Self.check(after: deadline, start: start, deadline: deadline, finishingLimit: finishingLimit, log: log)
            }
            source.resume()
            return source
        }
    }

    private static func check(after wait: Duration, start: ContinuousClock.Instant, deadline: Duration, finishingLimit: Duration, log: Logger) {
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(wait.components.seconds * 1000))) {
            let waited = ContinuousClock.now - start
            if Finishing.inProgress, waited < deadline + finishingLimit {
                check(after: .seconds(1), start: start, deadline: deadline, finishingLimit: finishingLimit, log: log)
                return
            }
            log.critical("the shutdown is still busy \(waited.components.seconds) s after the signal (a job that does not end): exiting now; finished files are intact, jobs cut off resume at the next start")
            exit(70)
        }
    }

    func cancel() { sources.forEach { $0.cancel() } }

    private final class Armed: Sendable {
        private let value = Locked(false)
        func arm() -> Bool { value.withLock { v in defer { v = true }; return !v } }
    }
}
