import CoreMetrics
import Foundation
import Logging
import Spool
import Webhooks

/// Delivers the cluster's webhook outbox (`webhook_events`, ClusterStore+Webhooks) from this
/// instance: whatever instance queued an event, dead or alive. Each round claims the events due
/// (the first undelivered one of each job), POSTs them with the outbox's secret and client,
/// and writes down each answer: delivered, or tried again with the outbox's backoff, given up
/// a day after it was queued. Every live instance runs one; the claim keeps them apart.
struct ClusterWebhookDelivery: Sendable {
    let store: ClusterStore
    /// Signs and POSTs, counts and logs as for one instance (`WebhookOutbox.post`).
    let outbox: WebhookOutbox
    var batch = 16
    /// How long a claim keeps the others off an event: longer than a POST may take (15 s).
    var hold: Duration = .seconds(60)

    /// One round; answers how many events were tried.
    @discardableResult
    func round(session: Int64?) async throws -> Int {
        let claimed = try await store.claimWebhooks(session: session, limit: batch, hold: hold)
        for event in claimed {
            if Task.isCancelled {
                await unclaim(event)
                continue
            }
            let outcome = await outbox.post(id: event.id, type: event.type, body: event.body)
            switch outcome {
            case .done:
                try await store.delivered(event)
            case .retry(let why), .giveUp(let why):
                // A shutdown cut it short: not the receiver's failure; free for the others.
                if Task.isCancelled {
                    await unclaim(event)
                    continue
                }
                let attempts = event.attempts + 1
                let gaveUp = try await store.failed(event, why: why, retryIn: outbox.schedule.delay(afterAttempts: attempts),
                                                    giveUpAfter: outbox.schedule.giveUpAfter)
                if gaveUp { outbox.expired(id: event.id, type: event.type, attempts: attempts, why: why) }
            }
        }
        return claimed.count
    }

    /// Frees a claimed event for the others. In a task of its own: this one is cancelled, and
    /// a query made from a cancelled task fails at once, which left the event held for `hold`
    /// (ClusterWebhookTests saw a shutdown's event wait 60 s).
    private func unclaim(_ event: ClusterStore.OutboxEvent) async {
        let store = self.store
        await Task { try? await store.unclaim(event) }.value
    }

    /// Rounds until cancelled: at once while there was work, else every `idle`; the table's
    /// depth recorded every few seconds (`sfubot_webhook_outbox_depth`).
    func run(session: @escaping @Sendable () -> Int64?, idle: Duration = .milliseconds(250), log: Logger) async {
        var failing = false
        var lastDepth = ContinuousClock.now - .seconds(10)
        while !Task.isCancelled {
            var tried = 0
            do {
                tried = try await round(session: session())
                if failing { log.info("cluster: the webhook outbox can be read again") }
                failing = false
            } catch {
                if !failing { log.warning("cluster: cannot deliver the webhook outbox (\(error)); trying again") }
                failing = true
            }
            if ContinuousClock.now - lastDepth > .seconds(5), let depth = try? await store.webhookDepth() {
                Gauge(label: "sfubot_webhook_outbox_depth").record(depth)
                lastDepth = .now
            }
            if tried == 0 || failing { try? await Task.sleep(for: failing ? .seconds(1) : idle) }
        }
    }
}
