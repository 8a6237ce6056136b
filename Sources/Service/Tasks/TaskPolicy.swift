import Spool

/// What a row of `tasks` is for: each kind one handler of `TaskWorker` (issue 41 item 4).
enum TaskKind: String, Sendable, CaseIterable, Codable {
    /// A Standard Webhook to POST (`args.type`, the body in `payload`), in order per job.
    case webhook
    /// A recording's merged manifest to build from the database and queue for upload (`--database`
    /// with `--storage`; key: the job), queued with the settle of its last file. Any instance.
    case merged
    /// A finished file to upload to `--storage` and verify (key: its object key; args `name`,
    /// `file`, then `object` once verified; with `--database` `folder`, `size`, `sha256` and
    /// `by`, alone the job's `kind` and `room`), pinned to the instance whose disk holds it;
    /// inline in `payload` (the merged manifest): any.
    case upload
}

/// The one retry policy of the task queue, for every kind: what a try's outcome does to its
/// task, and when a task claimed by an instance counts as abandoned (the rescuer). No I/O and
/// no clock of its own (the caller passes `now`, the database's in a cluster), so every case is
/// tested with instants alone (`TaskPolicyTests`); `TaskQueue`s apply what it decides, each as
/// one statement guarded by the state it starts from.
struct TaskPolicy<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration, Instant: Sendable {
    /// Failed tries back off `first` doubling to `maximum` (jittered); a kind that `expires`
    /// is given up `giveUpAfter` its creation.
    var schedule: RetrySchedule
    /// How long a claim keeps the others off a task: longer than one try may take (a POST: 15 s).
    var hold: Duration = .seconds(60)
    /// An upload's claim: a big file takes minutes. A dead claimer's is freed at once anyway
    /// (its session gone); this bounds only a hung one.
    var uploadHold: Duration = .seconds(3600)
    /// An upload's tries back off to 10 min at most (the upload queue's cap): a store back
    /// after an outage is used again soon; a webhook's receiver is not hammered for hours.
    var uploadMaximum: Duration = .seconds(600)

    /// 5 s doubling to 1 h, a webhook given up after a day (as `WebhookOutbox` without `--database`).
    static var standardSchedule: RetrySchedule { RetrySchedule(first: .seconds(5), maximum: .seconds(3600), giveUpAfter: .seconds(86_400)) }

    /// A webhook a day old is stale news; a file is never given up while it is there (its
    /// handler says `giveUp` when it is gone).
    func expires(_ kind: TaskKind) -> Bool { kind == .webhook }

    /// A task claimed by an instance (`running`), as its queue holds it.
    struct Claimed: Sendable, Equatable {
        var kind: TaskKind
        /// Tries that ended before this one.
        var attempts: Int
        var created: Instant
        var claimUntil: Instant
        /// When the claimer's database session was seen gone (nil: alive, or none named).
        var claimerGoneSince: Instant?

        init(kind: TaskKind, attempts: Int, created: Instant, claimUntil: Instant, claimerGoneSince: Instant? = nil) {
            (self.kind, self.attempts, self.created, self.claimUntil, self.claimerGoneSince) = (kind, attempts, created, claimUntil, claimerGoneSince)
        }
    }

    /// What to write for a claimed task.
    enum Decision: Sendable, Equatable {
        /// `completed`: the try succeeded (`attempts` counts it).
        case complete
        /// `available` again at `at`, its failed try counted.
        case retry(at: Instant, attempts: Int, why: String)
        /// `discarded`: it can never succeed, or (`expired`) its kind's time ran out.
        case discard(attempts: Int, why: String, expired: Bool)
        /// `available` at once, not counted: a try cut short by a shutdown, or a claimer gone.
        case release
        /// Still its claimer's.
        case keep
    }

    /// The end of a try. `cancelled`: this instance shuts down, so a failure is not the task's
    /// (released for the others). `jitter` in 0.75...1 (1 in tests).
    func afterTry(_ outcome: RetryOutcome, of task: Claimed, cancelled: Bool = false, at now: Instant, jitter: Double) -> Decision {
        let attempts = task.attempts + 1
        switch outcome {
        case .done:
            return .complete
        case _ where cancelled:
            return .release
        case .giveUp(let why):
            return .discard(attempts: attempts, why: why, expired: false)
        case .retry(let why):
            if expired(task, at: now) { return .discard(attempts: attempts, why: why, expired: true) }
            return .retry(at: now.advanced(by: schedule(task.kind).delay(afterAttempts: attempts, jitter: jitter)), attempts: attempts, why: why)
        }
    }

    /// The rescuer's look at a claimed task: abandoned once its claim ran out (the claimer hangs)
    /// or its claimer's session is gone (the claimer died: at once, nothing can finish the try);
    /// released then, or discarded if its kind's time ran out meanwhile.
    func rescue(_ task: Claimed, at now: Instant) -> Decision {
        guard task.claimUntil < now || task.claimerGoneSince != nil else { return .keep }
        if expired(task, at: now) {
            return .discard(attempts: task.attempts, why: "given up: its claimer went away after its time ran out", expired: true)
        }
        return .release
    }

    /// When a task claimed at `now` is free for the others if nobody writes its end.
    func claimUntil(from now: Instant) -> Instant { now.advanced(by: hold) }

    /// The backoff of `kind`'s failed tries.
    func schedule(_ kind: TaskKind) -> RetrySchedule {
        guard kind == .upload else { return schedule }
        var capped = schedule
        capped.maximum = min(capped.maximum, uploadMaximum)
        return capped
    }

    /// How long a claim of `kind` keeps the others off it.
    func hold(_ kind: TaskKind) -> Duration { kind == .upload ? uploadHold : hold }

    func expired(_ task: Claimed, at now: Instant) -> Bool {
        guard expires(task.kind), let limit = schedule.giveUpAfter else { return false }
        return task.created.advanced(by: limit) <= now
    }
}
