public import Foundation
public import Spool

/// The events serve sends (issue 27): a job's life, and uploads that fail.
public enum WebhookEventType: String, Sendable, Codable, CaseIterable {
    case jobStarted = "job.started"
    case jobReconnecting = "job.reconnecting"
    case jobFailedOver = "job.failed_over"
    case jobPaused = "job.paused"
    case jobResumed = "job.resumed"
    /// Carries the files, their sizes, SHA-256 and object URLs.
    case jobFinished = "job.finished"
    /// Carries the reason.
    case jobFailed = "job.failed"
    case uploadFailed = "upload.failed"
    /// A relay's destination: taking the stream (again, after an outage), failing, and the end.
    case relayStarted = "relay.started"
    case relayReconnecting = "relay.reconnecting"
    case relayEnded = "relay.ended"
}

/// One event in the outbox: its id (the `webhook-id`, the same on every try, for the receiver
/// to deduplicate), and its body, fixed when it was queued. The body follows the spec's
/// suggested shape: `{"type": ..., "timestamp": ..., "data": {...}}`.
public struct WebhookEvent: Retrying, Equatable {
    public let id: String
    public let type: String
    public let body: [UInt8]
    public var attempts = 0
    public var notBefore: Date
    public let created: Date
    public var lastError: String?

    /// `id` should name what happened once ("job-<id>.finished"), so that a producer repeating
    /// itself after a crash queues nothing twice; nil makes a random one.
    public init(_ type: WebhookEventType, data: some Encodable & Sendable, id: String? = nil, now: Date = Date()) throws(WebhookError) {
        self.id = id ?? "msg_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())"
        guard Spool<WebhookEvent>.isValid(id: self.id) else { throw WebhookError(.event("\"\(self.id)\" cannot be an event id (letters, digits, - _ . only)")) }
        self.type = type.rawValue
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do { body = Array(try encoder.encode(Envelope(type: type.rawValue, timestamp: now, data: data))) } catch {
            throw WebhookError(.event("cannot encode \(type.rawValue): \(error)"))
        }
        (notBefore, created) = (now, now)
    }

    struct Envelope<D: Encodable>: Encodable {
        let type: String
        let timestamp: Date
        let data: D
    }
}
