public import Foundation

/// The `sfubot` executable as a user runs it: `.build/<config>/sfubot`, beside the test bundle.
public enum SfubotProcess {
    public static let binary: URL = {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        while dir.path != "/", !FileManager.default.isExecutableFile(atPath: dir.appendingPathComponent("sfubot").path) {
            dir = dir.deletingLastPathComponent()
        }
        return dir.appendingPathComponent("sfubot")
    }()

    public struct Run: Sendable {
        public var status: Int32
        public var out: String
        public var err: String
        public init(status: Int32, out: String, err: String) { (self.status, self.out, self.err) = (status, out, err) }
    }

    /// Starts sfubot with its output captured (awaited, never blocking a test thread).
    public static func start(_ args: [String]) throws -> ChildProcess {
        try ChildProcess(binary, args)
    }

    public static func run(_ args: [String]) async throws -> Run {
        let r = try await start(args).finished()
        return Run(status: r.status, out: r.outText, err: r.errText)
    }
}
