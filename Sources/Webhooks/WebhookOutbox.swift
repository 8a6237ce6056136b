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
    /// The backoff, also for events kept elsewhere (with `--database`, serve's table).
    public let schedule: RetrySchedule
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
        (self.url, self.secret, self.http, self.timeout, self.logger, self.schedule) = (url, secret, http, timeout, logger, schedule)
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
            self.expired(id: event.id, type: event.type, attempts: event.attempts, why: why)
        })
    }

    /// An event given up after its day of tries, counted and logged (also one kept elsewhere).
    public func expired(id: String, type: String, attempts: Int, why: String) {
        counts.update { $0.expired += 1 }
        Counter(label: "sfubot_webhooks_expired_total").increment()
        logger.error("webhook \(id) (\(type)) dropped after \(attempts) tries over a day: \(why)")
    }

    func deliver(_ event: WebhookEvent) async -> RetryOutcome { await post(id: event.id, type: event.type, body: event.body) }

    /// One POST of an event, signed with this outbox's secret. The timestamp is this try's (the
    /// spec's receivers refuse old ones); the id and body are the event's own, so the receiver
    /// sees the same event each time. Public for events kept elsewhere (serve's table).
    public func post(id: String, type: String, body: [UInt8]) async -> RetryOutcome {
        let timestamp = Int(Date().timeIntervalSince1970)
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.headers.add(name: "webhook-id", value: id)
        request.headers.add(name: "webhook-timestamp", value: "\(timestamp)")
        request.headers.add(name: "webhook-signature", value: secret.signature(id: id, timestamp: timestamp, body: body))
        request.body = .bytes(ByteBuffer(bytes: body))
        counts.update { $0.attempts += 1 }
        Counter(label: "sfubot_webhook_attempts_total").increment()
        let why: String
        do {
            let response = try await http.execute(request, timeout: timeout)
            _ = try? await response.body.collect(upTo: 64 * 1024)
            if (200..<300).contains(response.status.code) {
                counts.update { $0.delivered += 1 }
                Counter(label: "sfubot_webhooks_delivered_total").increment()
                logger.debug("webhook \(id) (\(type)) delivered")
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
