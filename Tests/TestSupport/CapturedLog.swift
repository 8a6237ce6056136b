public import Logging
import Synchronization
import Locking

/// Every line a logger wrote, at every level, for tests that check what reaches the logs.
public final class CapturedLog: Sendable {
    private let lines = Locked<[String]>([])
    public init() {}

    public func logger(_ label: String) -> Logger {
        var l = Logger(label: label) { _ in Handler(sink: self) }
        l.logLevel = .trace
        return l
    }

    public var text: String { lines.withLock { $0.joined(separator: "\n") } }

    public struct Handler: LogHandler {
        public let sink: CapturedLog
        public var logLevel: Logger.Level = .trace
        public var metadata: Logger.Metadata = [:]
        public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        public func log(event: LogEvent) {
            let all = self.metadata.merging(event.metadata ?? [:]) { $1 }
            sink.lines.withLock { $0.append("\(event.level) \(event.message) \(all)") }
        }
    }
}
