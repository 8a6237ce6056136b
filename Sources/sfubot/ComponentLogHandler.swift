import Foundation
import Logging

/// Writes log lines to standard error labelled by the component that logged them: each part
/// of sfubot tags its logger with `component` metadata (janus, recorder, player, agent ...),
/// and the line says `sfubot.<component>`, so `-v` output can be filtered with grep by
/// component and by any other key (`janus.feed=…`, `room=…`, `call.id=…`).
struct ComponentLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { a, _ in a } }
        if let extra = event.metadata { all.merge(extra) { _, b in b } }
        let component = all.removeValue(forKey: "component").map { "sfubot.\($0)" } ?? label
        let pairs = all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let time = Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true))
        let line = "\(time) \(event.level) \(component):\(pairs.isEmpty ? "" : " [\(pairs)]") \(event.message)\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
}
