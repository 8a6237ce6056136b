import Foundation
import Spool

/// Follow-on work of a job, queued once and worked by `TaskWorker` until it is done: the
/// cluster's table `tasks` (ClusterStore+Tasks) or one instance's state folder. Both decide
/// with `TaskPolicy` and apply its decisions guarded by the task's state.
protocol TaskQueue: Sendable {
    /// Up to `limit` tasks of `kinds` due now, claimed for this instance (`running`): never one
    /// another instance holds, nor one pinned to another, nor one of a job whose earlier task of
    /// its kind (lower `seq`) has not finished.
    func claim(_ kinds: [TaskKind], session: Int64?, limit: Int) async throws -> [QueuedTask]
    /// A try's outcome written as the policy decides (nil: the task was no longer this
    /// instance's, nothing written). `cancelled`: cut short by a shutdown.
    @discardableResult
    func finish(_ task: QueuedTask, _ outcome: RetryOutcome, cancelled: Bool) async throws -> TaskDecision?
    /// Claimed tasks whose claimer is gone or hangs made available again (or discarded, past
    /// their time): the tasks and what was written.
    func rescue() async throws -> [(task: QueuedTask, decision: TaskDecision)]
    /// Tasks of `kind` not finished (available or running).
    func depth(_ kind: TaskKind) async throws -> Int
    /// Queues `task` on its own (false: one of its kind and key is queued).
    func add(_ task: NewTask) async throws -> Bool
    /// The worker's wait between idle rounds: `limit`, or less once a task is added here.
    func nap(upTo limit: Duration) async
}

/// `TaskPolicy.Decision` as a queue reports it.
enum TaskDecision: Sendable, Equatable {
    case complete, retry(attempts: Int, why: String), discard(attempts: Int, why: String, expired: Bool), release, keep

    init<I>(_ decision: TaskPolicy<I>.Decision) {
        switch decision {
        case .complete: self = .complete
        case .retry(_, let attempts, let why): self = .retry(attempts: attempts, why: why)
        case .discard(let attempts, let why, let expired): self = .discard(attempts: attempts, why: why, expired: expired)
        case .release: self = .release
        case .keep: self = .keep
        }
    }
}

/// A task to queue.
struct NewTask: Sendable, Equatable {
    var kind: TaskKind
    /// Names it within its kind: queued once whoever queues it (a webhook's id).
    var key: String
    /// Its parent job (nil: none).
    var job: String?
    /// Worked after every task of the same kind and job queued before it.
    var ordered = false
    /// The only instance that may work it (nil: any).
    var pinnedTo: String?
    /// Small parameters of its kind.
    var args: [String: String] = [:]
    /// Bytes kept exactly (a webhook's body).
    var payload: String?
}

/// A task claimed by this instance for one try.
struct QueuedTask: Sendable, Equatable {
    var id: Int64
    var kind: TaskKind
    var key: String
    var job: String?
    var seq: Int?
    var args: [String: String]
    var payload: String?
    /// Tries that ended before this one.
    var attempts: Int
}
