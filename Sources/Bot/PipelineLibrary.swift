public import Foundation

/// Loads the pipeline descriptions in `pipelines/` (gst-launch syntax, `#` comments), so
/// users can read and adapt the graphs the bot runs.
public struct PipelineLibrary: Sendable {
    public let directory: URL

    /// Uses `directory`, else `$SFUBOT_PIPELINES`, else the first `pipelines/` folder found in
    /// the working directory or above the executable (a checkout's `.build/…/sfubot`).
    public init(directory: String? = nil) throws(BotError) {
        let fm = FileManager.default
        var candidates: [URL] = []
        if let directory { candidates.append(URL(fileURLWithPath: directory)) }
        if let env = ProcessInfo.processInfo.environment["SFUBOT_PIPELINES"] { candidates.append(URL(fileURLWithPath: env)) }
        if directory == nil {
            candidates.append(URL(fileURLWithPath: fm.currentDirectoryPath).appendingPathComponent("pipelines"))
            var dir = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").resolvingSymlinksInPath().deletingLastPathComponent()
            for _ in 0..<6 {
                candidates.append(dir.appendingPathComponent("pipelines"))
                dir = dir.deletingLastPathComponent()
            }
        }
        guard let found = candidates.first(where: { fm.fileExists(atPath: $0.appendingPathComponent("play-audio.pipeline").path) }) else {
            throw .pipelinesNotFound(candidates.first?.path ?? "pipelines")
        }
        self.directory = found
    }

    /// The description `name`.pipeline with comments removed and `{key}` placeholders
    /// replaced by quoted values.
    public func description(_ name: String, _ values: [String: String] = [:]) throws(BotError) -> String {
        let url = directory.appendingPathComponent("\(name).pipeline")
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { throw .pipelinesNotFound(url.path) }
        var body = text.split(whereSeparator: \.isNewline)
            .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("#") }
            .joined(separator: " ")
        for (key, value) in values { body = body.replacingOccurrences(of: "{\(key)}", with: Self.quote(value)) }
        return body
    }

    /// Quotes a value for gst-launch syntax; numbers stay bare so they can sit in caps.
    static func quote(_ s: String) -> String {
        if !s.isEmpty, s.allSatisfy(\.isNumber) { return s }
        return "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}
