public import AsyncHTTPClient
public import Foundation
public import Logging
public import Spool
import CoreMetrics
public import NIOCore
import NIOHTTP1

/// Webhook delivery that survives restarts: each event is a file in the outbox directory until
/// the receiver answers 2xx. Failed tries back off (5 s doubling to 1 h by default) for up to a
/// day from the event's creation, then the event is dropped and counted. Delivery is at least
/// once: a receiver deduplicates by `webhook-id`. Metrics: `sfubot_webhook_outbox_depth`,
/// `sfubot_webhook_attempts_total`, `sfubot_webhook_failures_total`,
/// `sfubot_webhooks_delivered_total`, `sfubot_webhooks_expired_total`.
public final class WebhookOutbox: Sendable {
    public struct Stats: Sendable, Equatable {
        public var depth = 0
        public var attempts = 0
        public var failures = 0
        public var delivered = 0
        public var expired = 0
    }

    let runner: SpoolRunner<WebhookEvent>
    let url: URL
    let secret: WebhookSecret
    let http: HTTPClient
    let timeout: TimeAmount
    let logger: Logger
    private let counts = Tally(Stats())

    public init(directory: URL, url: URL, secret: WebhookSecret, http: HTTPClient = WebhookOutbox.http, timeout: TimeAmount = .seconds(15),
                schedule: RetrySchedule = RetrySchedule(first: .seconds(5), maximum: .seconds(3600), giveUpAfter: .seconds(86_400)),
                logger: Logger = Logger(label: "sfubot.webhooks")) throws(WebhookError) {
        guard url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw WebhookError(.url("\(url.absoluteString) is not an http(s) URL"))
        }
        let spool: Spool<WebhookEvent>
        do { spool = try Spool(directory: directory, what: "the webhook outbox") } catch { throw WebhookError(.event("\(error)")) }
        let counts = self.counts
        runner = SpoolRunner(spool: spool, schedule: schedule, logger: logger) { depth in
            counts.update { $0.depth = depth }
            Gauge(label: "sfubot_webhook_outbox_depth").record(depth)
        }
        (self.url, self.secret, self.http, self.timeout, self.logger) = (url, secret, http, timeout, logger)
        let depth = spool.load().entries.count
        counts.update { $0.depth = depth }
        Gauge(label: "sfubot_webhook_outbox_depth").record(depth)
    }

    public var stats: Stats { counts.value }

    /// The process's client for receivers: one that refuses connections fails the try at once
    /// (AsyncHTTPClient's default retries the connection until the request's deadline); the
    /// outbox's backoff does the retrying.
    public static let http: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout.connect = .seconds(10)
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// Queues `event` for delivery (nothing if an event with its id is queued already).
    @discardableResult
    public func send(_ event: WebhookEvent) throws(SpoolError) -> Bool {
        let added = try runner.add(event.id, event)
        if added { counts.update { $0.depth += 1 } }
        return added
    }

    /// Delivers until cancelled.
    public func run() async {
        await runner.run(attempt: { _, event in await self.deliver(event) }, gaveUp: { _, event, why in
            self.counts.update { $0.expired += 1 }
            Counter(label: "sfubot_webhooks_expired_total").increment()
            self.logger.error("webhook \(event.id) (\(event.type)) dropped after \(event.attempts) tries over a day: \(why)")
        })
    }

    /// One POST. The timestamp is this try's (the spec's receivers refuse old ones); the id and
    /// body are the event's own, so the receiver sees the same event each time.
    func deliver(_ event: WebhookEvent) async -> RetryOutcome {
        let timestamp = Int(Date().timeIntervalSince1970)
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.headers.add(name: "webhook-id", value: event.id)
        request.headers.add(name: "webhook-timestamp", value: "\(timestamp)")
        request.headers.add(name: "webhook-signature", value: secret.signature(id: event.id, timestamp: timestamp, body: event.body))
        request.body = .bytes(ByteBuffer(bytes: event.body))
        counts.update { $0.attempts += 1 }
        Counter(label: "sfubot_webhook_attempts_total").increment()
        let why: String
        do {
            let response = try await http.execute(request, timeout: timeout)
            _ = try? await response.body.collect(upTo: 64 * 1024)
            if (200..<300).contains(response.status.code) {
                counts.update { $0.delivered += 1 }
                Counter(label: "sfubot_webhooks_delivered_total").increment()
                logger.debug("webhook \(event.id) (\(event.type)) delivered")
                return .done
            }
            why = "the receiver answered \(response.status.code)"
        } catch {
            why = "cannot reach \(url.absoluteString): \(error)"
        }
        // Cut short by a shutdown: not the receiver's failure (the runner keeps the event as it was).
        if Task.isCancelled { return .retry("cancelled") }
        counts.update { $0.failures += 1 }
        Counter(label: "sfubot_webhook_failures_total").increment()
        return .retry(why)
    }
}
