import Foundation
import Locking
import Logging
import Spool
import Synchronization

/// One instance's task queue (no `--database`): a file per task in the state folder (`tasks/`,
/// a `Spool`: written synced, renamed into place), with the cluster's semantics (a task queued
/// once per kind and key, a job's ordered tasks one after the other, `TaskPolicy`'s retries),
/// so that `TaskWorker` is one code path for both. This process is the only claimer: its claims
/// live in memory and end with it, so the rescuer has nothing to do (after a crash every task
/// is `available` again). A finished task's file is removed (its key can be queued again).
final class LocalTaskQueue: TaskQueue {
    typealias Policy = TaskPolicy<DatabaseInstant>

    struct Entry: Codable, Sendable {
        var kind: TaskKind
        var key: String
        var job: String?
        var seq: Int?
        var args: [String: String]
        var payload: String?
        var attempts = 0
        var runAt: Date
        var created: Date
        var lastError: String?
    }

    let spool: Spool<Entry>
    let policy: Policy
    let logger: Logger
    /// The tasks on disk (this process writes them all), and those claimed now.
    private let state: Locked<(tasks: [String: Entry], claimed: Set<String>)>
    /// Synced writes off Swift's cooperative pool.
    private let io = DispatchQueue(label: "sfubot.tasks")
    /// Cuts the worker's idle wait short when a task is added.
    private let added = Wakeup()

    init(directory: URL, policy: Policy, logger: Logger) throws(SpoolError) {
        spool = try Spool(directory: directory, what: "the task queue")
        let (entries, unreadable) = spool.load()
        for name in unreadable { logger.error("the task queue: \(name) cannot be read; it stays in \(directory.path) for a person to look at") }
        state = Locked((Dictionary(entries.map { ($0.id, $0.entry) }, uniquingKeysWith: { a, _ in a }), []))
        (self.policy, self.logger) = (policy, logger)
    }

    static func name(_ kind: TaskKind, _ key: String) -> String { "\(kind.rawValue)-\(key)" }

    /// Queues `task` (synced before it returns); false: one of its kind and key is queued.
    @discardableResult
    func enqueue(_ task: NewTask, now: Date = Date()) throws(SpoolError) -> Bool {
        let name = Self.name(task.kind, task.key)
        return try state.withLock { s throws(SpoolError) -> Bool in
            guard s.tasks[name] == nil else { return false }
            let seq = task.ordered && task.job != nil
                ? (s.tasks.values.filter { $0.kind == task.kind && $0.job == task.job }.compactMap(\.seq).max() ?? 0) + 1 : nil
            let entry = Entry(kind: task.kind, key: task.key, job: task.job, seq: seq, args: task.args, payload: task.payload, runAt: now, created: now)
            guard try spool.add(name, entry) else { return false }
            s.tasks[name] = entry
            added.signal()
            return true
        }
    }

    func add(_ task: NewTask) async throws -> Bool { try enqueue(task) }

    func nap(upTo limit: Duration) async { await added.wait(upTo: limit) }

    /// The names of the tasks queued now (`name(_:_:)`).
    var names: Set<String> { state.withLock { Set($0.tasks.keys) } }

    func claim(_ kinds: [TaskKind], session: Int64?, limit: Int) async throws -> [QueuedTask] {
        let now = Date()
        return state.withLock { s -> [QueuedTask] in
            let open = s.tasks
            // Not after an earlier task of its job and kind still open (waiting, or claimed now).
            func waits(_ e: Entry) -> Bool {
                guard let seq = e.seq else { return false }
                return open.values.contains { $0.kind == e.kind && $0.job == e.job && ($0.seq ?? .max) < seq }
            }
            let due = open.filter { name, e in kinds.contains(e.kind) && e.runAt <= now && !s.claimed.contains(name) && !waits(e) }.sorted { ($0.value.created, $0.value.seq ?? 0, $0.key) < ($1.value.created, $1.value.seq ?? 0, $1.key) }.prefix(limit)
            s.claimed.formUnion(due.map(\.key))
            return due.map { _, e in
                QueuedTask(id: 0, kind: e.kind, key: e.key, job: e.job, seq: e.seq, args: e.args, payload: e.payload, attempts: e.attempts)
            }
        }
    }

    func finish(_ task: QueuedTask, _ outcome: RetryOutcome, cancelled: Bool) async throws -> TaskDecision? {
        let name = Self.name(task.kind, task.key)
        guard var entry = state.withLock({ $0.claimed.contains(name) ? $0.tasks[name] : nil }) else { return nil }
        let now = DatabaseInstant(Date())
        let claimed = Policy.Claimed(kind: entry.kind, attempts: entry.attempts, created: DatabaseInstant(entry.created), claimUntil: policy.claimUntil(from: now))
        let decision = policy.afterTry(outcome, of: claimed, cancelled: cancelled, at: now, jitter: .random(in: 0.75...1))
        var keep: Entry?
        switch decision {
        case .complete, .discard: keep = nil
        case .release, .keep: keep = entry
        case .retry(let at, let attempts, let why):
            (entry.attempts, entry.runAt, entry.lastError) = (attempts, at.date, why)
            keep = entry
        }
        let spool = self.spool, changed = decision != .release && decision != .keep, kept = keep
        let written: Result<Void, SpoolError> = await OffPool.run(on: io) {
            guard changed else { return .success(()) }
            do throws(SpoolError) {
                if let kept { try spool.put(name, kept) } else { try spool.remove(name) }
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        state.withLock { s in
            s.tasks[name] = keep
            s.claimed.remove(name)
        }
        try written.get()
        return TaskDecision(decision)
    }

    /// Every task not claimed, oldest first, queued in `queue` and removed here once it took
    /// it (`--database`: what this instance queued on its own goes to the cluster). Stops at
    /// the first that cannot be moved (throws), so a job's tasks keep their order; answers how
    /// many were moved.
    @discardableResult
    func moveAll(into queue: any TaskQueue) async throws -> Int {
        let open = state.withLock { s in s.tasks.filter { !s.claimed.contains($0.key) } }
            .sorted { ($0.value.created, $0.value.seq ?? 0, $0.key) < ($1.value.created, $1.value.seq ?? 0, $1.key) }
        var moved = 0
        for (name, e) in open {
            _ = try await queue.add(NewTask(kind: e.kind, key: e.key, job: e.job, ordered: e.seq != nil, args: e.args, payload: e.payload))
            let spool = self.spool
            let removed: SpoolError? = await OffPool.run(on: io) {
                do throws(SpoolError) { try spool.remove(name); return nil } catch { return error }
            }
            _ = state.withLock { $0.tasks.removeValue(forKey: name) }
            if let removed { throw removed }
            moved += 1
        }
        return moved
    }

    /// Nothing: this process is the only claimer, and its claims end with it.
    func rescue() async throws -> [(task: QueuedTask, decision: TaskDecision)] { [] }

    func depth(_ kind: TaskKind) async throws -> Int {
        state.withLock { s in s.tasks.values.filter { $0.kind == kind }.count }
    }
}

extension DatabaseInstant {
    /// A wall-clock time as the policy's instant (one instance's queue: its own clock).
    init(_ date: Date) { self.init(micros: Int64((date.timeIntervalSince1970 * 1e6).rounded())) }
    var date: Date { Date(timeIntervalSince1970: Double(micros) / 1e6) }
}
