/// Why the agent stopped, in words that say what to do. Kinds can grow without breaking
/// callers; `area` is what a caller may branch on (the CLI picks its exit code from it).
public struct AgentError: Error, CustomStringConvertible, Sendable {
    /// What the user has to look at.
    public enum Area: Sendable, Equatable {
        /// The agent's JSON config (exit 78).
        case config
        /// The device identity key file (exit 65).
        case identity
        /// The ECall backend's REST API (exit 69).
        case backend
        /// RabbitMQ's Web-STOMP (exit 69).
        case stomp
    }

    private enum Kind: Sendable {
        case config(String)
        case identity(String)
        case backend(String)
        case stomp(String)
    }
    private let kind: Kind

    public static func config(_ why: String) -> Self { .init(kind: .config(why)) }
    public static func identity(_ why: String) -> Self { .init(kind: .identity(why)) }
    public static func backend(_ why: String) -> Self { .init(kind: .backend(why)) }
    public static func stomp(_ why: String) -> Self { .init(kind: .stomp(why)) }

    public var area: Area {
        switch kind {
        case .config: .config
        case .identity: .identity
        case .backend: .backend
        case .stomp: .stomp
        }
    }

    public var description: String {
        switch kind {
        case .config(let why):
            "agent config: \(why) (fix the file given with --config; `sfubot agent --help` lists its keys)"
        case .identity(let why):
            "identity key: \(why) (make one with `sfubot keys generate` and name it as identity in the config)"
        case .backend(let why):
            "ECall backend: \(why) (check api, api_id and api_secret in the config, and that the backend is up)"
        case .stomp(let why):
            "STOMP: \(why) (check that RabbitMQ's Web-STOMP is up at the URL /credentials gives, or set stomp in the config)"
        }
    }
}
