import Foundation
public import Logging
import Locking
import Synchronization

/// Tries a spool's entries until each is done: the due ones in order of their due time, one at
/// a time; a failed one waits its backoff (written to its file first, so a restart keeps it).
/// Between passes it sleeps until the next entry is due or `wake()` is called (an entry added).
public actor SpoolRunner<Entry: Retrying> {
    public nonisolated let spool: Spool<Entry>
    let schedule: RetrySchedule
    let logger: Logger
    private let wakeup = Wakeup()

    /// Called after each pass with the number of entries left (for a depth gauge).
    public typealias DepthReport = @Sendable (Int) -> Void
    private let reportDepth: DepthReport

    public init(spool: Spool<Entry>, schedule: RetrySchedule, logger: Logger, reportDepth: @escaping DepthReport = { _ in }) {
        (self.spool, self.schedule, self.logger, self.reportDepth) = (spool, schedule, logger, reportDepth)
    }

    /// Adds an entry (unless its id is there already) and wakes the runner.
    @discardableResult
    public nonisolated func add(_ id: String, _ entry: Entry) throws(SpoolError) -> Bool {
        let added = try spool.add(id, entry)
        wakeup.signal()
        return added
    }

    /// Makes the runner look at its entries now (after an outside change, or in tests).
    public nonisolated func wake() { wakeup.signal() }

    /// Runs until cancelled. `attempt` is called for each due entry; on `.done` and `.giveUp`
    /// the entry is removed after it returns (so work it finished is never lost to a crash in
    /// between: the worst is one more try). `gaveUp` hears of entries that expired or gave up.
    public func run(attempt: @Sendable (String, Entry) async -> RetryOutcome,
                    gaveUp: @Sendable (String, Entry, String) async -> Void = { _, _, _ in }) async {
        while !Task.isCancelled {
            let next = await pass(attempt: attempt, gaveUp: gaveUp)
            let wait = next.map { max($0.timeIntervalSinceNow, 0) } ?? 3600
            if wait > 0 { await wakeup.wait(upTo: .seconds(min(wait, 3600))) }
        }
    }

    /// One pass over the due entries; returns when the next one is due.
    func pass(attempt: @Sendable (String, Entry) async -> RetryOutcome, gaveUp: @Sendable (String, Entry, String) async -> Void) async -> Date? {
        let (entries, unreadable) = spool.load()
        for name in unreadable { logger.error("\(spool.what): entry \(name) cannot be read; it stays in \(spool.directory.path) for a person to look at") }
        var remaining = entries.count
        var next: Date?
        for (id, var entry) in entries.sorted(by: { $0.entry.notBefore < $1.entry.notBefore }) {
            if Task.isCancelled { return nil }
            guard entry.notBefore <= Date() else {
                next = min(next ?? entry.notBefore, entry.notBefore)
                continue
            }
            let outcome = await attempt(id, entry)
            // A try cut short by cancellation (a shutdown) is no failure: the entry stays as it was.
            if Task.isCancelled, outcome != .done { return nil }
            entry.attempts += 1
            switch outcome {
            case .done:
                remove(id)
                remaining -= 1
            case .giveUp(let why):
                logger.error("\(spool.what): \(id) given up: \(why)")
                await gaveUp(id, entry, why)
                remove(id)
                remaining -= 1
            case .retry(let why):
                entry.lastError = why
                if schedule.expired(created: entry.created, now: Date()) {
                    logger.error("\(spool.what): \(id) given up after \(entry.attempts) tries: \(why)")
                    await gaveUp(id, entry, why)
                    remove(id)
                    remaining -= 1
                    continue
                }
                let delay = schedule.delay(afterAttempts: entry.attempts)
                entry.notBefore = Date().addingTimeInterval(delay.seconds)
                logger.warning("\(spool.what): \(id) failed (try \(entry.attempts)), again in \(Int(delay.seconds.rounded(.up))) s: \(why)")
                do { try spool.put(id, entry) } catch { logger.error("\(error)") }
                next = min(next ?? entry.notBefore, entry.notBefore)
            }
            reportDepth(remaining)
        }
        reportDepth(remaining)
        return next
    }

    private func remove(_ id: String) {
        do { try spool.remove(id) } catch { logger.error("\(error)") }
    }
}

/// A sleep that `signal()` cuts short; a signal that comes while nobody sleeps is kept for the
/// next sleep, so an entry added during a pass is never left waiting for the long timeout.
public final class Wakeup: Sendable {
    private struct State { var pending = false; var sleeper: Task<Void, Never>? }
    private let state = Locked(State())

    public init() {}

    public func signal() {
        state.withLock { s in
            s.pending = true
            s.sleeper?.cancel()
        }
    }

    public func wait(upTo limit: Duration) async {
        let sleeper = Task { _ = try? await Task.sleep(for: limit) }
        let already = state.withLock { s in
            if s.pending { s.pending = false; return true }
            s.sleeper = sleeper
            return false
        }
        if already { sleeper.cancel() }
        await withTaskCancellationHandler { await sleeper.value } onCancel: { sleeper.cancel() }
        state.withLock { s in
            s.sleeper = nil
            s.pending = false
        }
    }
}
