import CoreMetrics
import Foundation
import Logging
import Spool
import Webhooks

/// The one loop that works the task queue (issue 41 item 4): each round the rescuer frees what
/// dead or hung claimers hold, then the tasks due are claimed, each tried by its kind's handler,
/// and each outcome written as `TaskPolicy` decides. Every live instance runs one; the claim
/// keeps them apart.
struct TaskWorker: Sendable {
    let queue: any TaskQueue
    /// Signs and POSTs `webhook` tasks, counts and logs as without `--database`
    /// (`WebhookOutbox.post`); nil: this instance sends none (no `--webhook-url`).
    let webhooks: WebhookOutbox?
    /// With `--database`: the tasks this instance queued on its own (the job manager's actor
    /// does not wait for the database), moved into `queue` in their order at the start of each
    /// round; an addition there ends the idle wait.
    var inbox: LocalTaskQueue?
    /// Builds and queues a recording's merged manifest (`merged` tasks; nil: not here).
    var merge: (@Sendable (_ job: String) async -> RetryOutcome)?
    /// Uploads a finished file and verifies it (`upload` tasks; nil: no `--storage` here).
    var upload: (@Sendable (QueuedTask) async -> RetryOutcome)?
    var batch = 16

    /// The kinds this instance can work.
    var kinds: [TaskKind] {
        var kinds: [TaskKind] = []
        if webhooks != nil { kinds.append(.webhook) }
        if merge != nil { kinds.append(.merged) }
        if upload != nil { kinds.append(.upload) }
        return kinds
    }

    /// One round; answers how many tasks were tried.
    @discardableResult
    func round(session: Int64?) async throws -> Int {
        guard !kinds.isEmpty else { return 0 }
        if let inbox { try await inbox.moveAll(into: queue) }
        for (task, decision) in try await queue.rescue() { ended(task, decision) }
        let queue = self.queue, quick = kinds.filter { $0 != .upload }, batch = self.batch, uploads = upload != nil
        // Claims and outcomes are written in tasks of their own: a shutdown's cancellation
        // landing mid-query would lose the answer of a statement the database applied, and
        // leave the task held until its claim ran out (60 s). One upload a round (it may take
        // minutes): the others are not held meanwhile, and the round's quick tasks go first.
        let claimed = try await Task {
            var claimed: [QueuedTask] = []
            if !quick.isEmpty { claimed += try await queue.claim(quick, session: session, limit: batch) }
            if uploads { claimed += try await queue.claim([.upload], session: session, limit: 1) }
            return claimed
        }.value
        for task in claimed {
            if Task.isCancelled {
                await release(task)
                continue
            }
            let outcome = await work(task)
            // A shutdown cut it short: not the task's failure; free for the others.
            if Task.isCancelled, outcome != .done {
                await release(task)
                continue
            }
            if let decision = try await Task(operation: { try await queue.finish(task, outcome, cancelled: false) }).value { ended(task, decision) }
        }
        return claimed.count
    }

    /// One try of `task` by its kind's handler.
    private func work(_ task: QueuedTask) async -> RetryOutcome {
        switch task.kind {
        case .webhook:
            guard let webhooks else { return .retry("this instance sends no webhooks") }
            return await webhooks.post(id: task.key, type: task.args["type"] ?? "", body: Array((task.payload ?? "").utf8))
        case .merged:
            guard let merge, let job = task.job else { return .giveUp("a merged manifest task with no job") }
            return await merge(job)
        case .upload:
            guard let upload else { return .retry("this instance uploads nothing") }
            return await upload(task)
        }
    }

    /// What a kind's owner hears of a task given up.
    private func ended(_ task: QueuedTask, _ decision: TaskDecision) {
        guard case .discard(let attempts, let why, let expired) = decision, expired, task.kind == .webhook else { return }
        webhooks?.expired(id: task.key, type: task.args["type"] ?? "", attempts: attempts, why: why)
    }

    /// Frees a claimed task for the others. In a task of its own: this one is cancelled, and a
    /// query made from a cancelled task fails at once, which left the task held for the claim's
    /// hold (ClusterWebhookTests saw a shutdown's event wait 60 s).
    private func release(_ task: QueuedTask) async {
        let queue = self.queue
        await Task { _ = try? await queue.finish(task, .retry("cancelled"), cancelled: true) }.value
    }

    /// Rounds until cancelled: at once while there was work, else every `idle`; the webhook and
    /// upload depths recorded every few seconds (`sfubot_webhook_outbox_depth`,
    /// `sfubot_upload_queue_depth`).
    func run(session: @escaping @Sendable () -> Int64?, idle: Duration = .milliseconds(250), log: Logger) async {
        var failing = false
        var lastDepth = ContinuousClock.now - .seconds(10)
        while !Task.isCancelled {
            var tried = 0
            do {
                tried = try await round(session: session())
                if failing { log.info("tasks: the task queue can be read again") }
                failing = false
            } catch {
                if !failing { log.warning("tasks: cannot work the task queue (\(error)); trying again") }
                failing = true
            }
            if ContinuousClock.now - lastDepth > .seconds(5) {
                if webhooks != nil, let depth = try? await queue.depth(.webhook) { Gauge(label: "sfubot_webhook_outbox_depth").record(depth) }
                if upload != nil, let depth = try? await queue.depth(.upload) { Gauge(label: "sfubot_upload_queue_depth").record(depth) }
                lastDepth = .now
            }
            if failing {
                try? await Task.sleep(for: .seconds(1))
            } else if tried == 0 {
                if let inbox { await inbox.nap(upTo: idle) } else { await queue.nap(upTo: idle) }
            }
        }
    }
}
