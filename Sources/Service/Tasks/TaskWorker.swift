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
    var batch = 16

    /// The kinds this instance can work.
    var kinds: [TaskKind] { (webhooks == nil ? [] : [.webhook]) + (merge == nil ? [] : [.merged]) }

    /// One round; answers how many tasks were tried.
    @discardableResult
    func round(session: Int64?) async throws -> Int {
        guard !kinds.isEmpty else { return 0 }
        if let inbox { try await inbox.moveAll(into: queue) }
        for (task, decision) in try await queue.rescue() { ended(task, decision) }
        let queue = self.queue, kinds = self.kinds, batch = self.batch
        // Claims and outcomes are written in tasks of their own: a shutdown's cancellation
        // landing mid-query would lose the answer of a statement the database applied, and
        // leave the task held until its claim ran out (60 s).
        let claimed = try await Task { try await queue.claim(kinds, session: session, limit: batch) }.value
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

    /// Rounds until cancelled: at once while there was work, else every `idle`; the webhook
    /// depth recorded every few seconds (`sfubot_webhook_outbox_depth`).
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
            if webhooks != nil, ContinuousClock.now - lastDepth > .seconds(5), let depth = try? await queue.depth(.webhook) {
                Gauge(label: "sfubot_webhook_outbox_depth").record(depth)
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
