import Crypto
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
/// is `available` again). A finished task's file is removed (its key can be queued again), but
/// an upload of a job's file stays, completed or discarded, as long as its job
/// (LocalTaskQueue+Uploads).
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
        /// An upload's end (nil: open, and every other kind's).
        var ended: Ended?

        enum Ended: String, Codable, Sendable { case completed, discarded }
    }

    let spool: Spool<Entry>
    let policy: Policy
    let logger: Logger
    /// Whether `upload.failed` and `job.finished` are queued here (`--webhook-url`).
    let webhooks: Bool
    /// The tasks on disk (this process writes them all), and those claimed now.
    let state: Locked<(tasks: [String: Entry], claimed: Set<String>)>
    /// Synced writes off Swift's cooperative pool.
    let io = DispatchQueue(label: "sfubot.tasks")
    /// Cuts the worker's idle wait short when a task is added.
    let added = Wakeup()

    init(directory: URL, policy: Policy, webhooks: Bool = false, logger: Logger) throws(SpoolError) {
        spool = try Spool(directory: directory, what: "the task queue")
        let (entries, unreadable) = spool.load()
        for name in unreadable { logger.error("the task queue: \(name) cannot be read; it stays in \(directory.path) for a person to look at") }
        state = Locked((Dictionary(entries.map { ($0.id, $0.entry) }, uniquingKeysWith: { a, _ in a }), []))
        (self.policy, self.webhooks, self.logger) = (policy, webhooks, logger)
    }

    /// A task's file name: its kind and key, or for a key no file may be named (an object key
    /// has slashes) a hash of it with its readable tail.
    static func name(_ kind: TaskKind, _ key: String) -> String {
        let plain = "\(kind.rawValue)-\(key)"
        return Spool<Entry>.isValid(id: plain) ? plain : "\(kind.rawValue)-\(fileID(key: key))"
    }

    /// An object key as a file name (readable tail, hash for uniqueness); names its `upload.failed` too.
    static func fileID(key: String) -> String {
        let readable = String(key.suffix(60).map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." ? $0 : "_" })
        let digest = SHA256.hash(data: Data(key.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
        return "\(digest)-\(readable)"
    }

    /// Queues `task` (synced before it returns); false: one of its kind and key is queued.
    @discardableResult
    func enqueue(_ task: NewTask, now: Date = Date()) throws(SpoolError) -> Bool {
        try enqueue([task], now: now) == 1
    }

    /// Queues `tasks` together (none is claimed before all are queued), each `adjusted` first
    /// (an older version's entry: its tries, next try, end); answers how many were new.
    @discardableResult
    func enqueue(_ tasks: [NewTask], now: Date = Date(), adjusted: (NewTask, inout Entry) -> Void = { _, _ in }) throws(SpoolError) -> Int {
        try state.withLock { s throws(SpoolError) -> Int in
            var count = 0
            for task in tasks {
                if try Self.insert(task, into: &s.tasks, spool: spool, now: now, adjusted: adjusted) { count += 1 }
            }
            if count > 0 { added.signal() }
            return count
        }
    }

    /// `task` written and kept in `tasks` (under the lock) unless one of its kind and key is there.
    static func insert(_ task: NewTask, into tasks: inout [String: Entry], spool: Spool<Entry>, now: Date,
                       adjusted: (NewTask, inout Entry) -> Void = { _, _ in }) throws(SpoolError) -> Bool {
        let name = Self.name(task.kind, task.key)
        guard tasks[name] == nil else { return false }
        let seq = task.ordered && task.job != nil
            ? (tasks.values.filter { $0.kind == task.kind && $0.job == task.job }.compactMap(\.seq).max() ?? 0) + 1 : nil
        var entry = Entry(kind: task.kind, key: task.key, job: task.job, seq: seq, args: task.args, payload: task.payload, runAt: now, created: now)
        adjusted(task, &entry)
        guard try spool.add(name, entry) else { return false }
        tasks[name] = entry
        return true
    }

    func add(_ task: NewTask) async throws -> Bool { try enqueue(task) }

    func nap(upTo limit: Duration) async { await added.wait(upTo: limit) }

    /// The names of the tasks queued now and not ended (`name(_:_:)`).
    var names: Set<String> { state.withLock { Set($0.tasks.filter { $0.value.ended == nil }.keys) } }

    func claim(_ kinds: [TaskKind], session: Int64?, limit: Int) async throws -> [QueuedTask] {
        let now = Date()
        return state.withLock { s -> [QueuedTask] in
            let open = s.tasks.filter { $0.value.ended == nil }
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

    /// Every open task not claimed, oldest first, queued in `queue` and removed here once it took
    /// it (`--database`: what this instance queued on its own goes to the cluster). Stops at
    /// the first that cannot be moved (throws), so a job's tasks keep their order; answers how
    /// many were moved.
    @discardableResult
    func moveAll(into queue: any TaskQueue) async throws -> Int {
        let open = state.withLock { s in s.tasks.filter { !s.claimed.contains($0.key) && $0.value.ended == nil } }
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
        state.withLock { s in s.tasks.values.filter { $0.kind == kind && $0.ended == nil }.count }
    }
}

extension DatabaseInstant {
    /// A wall-clock time as the policy's instant (one instance's queue: its own clock).
    init(_ date: Date) { self.init(micros: Int64((date.timeIntervalSince1970 * 1e6).rounded())) }
    var date: Date { Date(timeIntervalSince1970: Double(micros) / 1e6) }
}
