public import Bot
public import Foundation
public import Proof
public import Janus
public import Logging

/// How `sfubot serve` runs: where it listens, whom it trusts, which Janus its jobs use.
public struct ServeConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// The bearer token every `/v1` request carries, read again when its file changes.
    public var tokens: TokenFile
    /// Where jobs' files may be: recordings below `roots.output`, media and key files below
    /// `roots.media`.
    public var roots: Roots
    /// The Janus servers jobs may name (`--janus` always among them).
    public var janusAllowed: JanusAllowList
    /// Where relay jobs may send (`--relay-allow`); none unless given.
    public var relayAllowed = RelayAllowList()
    /// Active jobs at most; past it a POST is answered 429.
    public var maxJobs = 25 * max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// The Janus of every job that names none, and the one `/readyz` checks.
    public var janus: String
    /// Janus `apisecret` / `token` of `janus`, if it wants them (and the timings of every Janus).
    public var janusOptions: JanusSession.Options
    /// Credentials of the other allowed Janus servers, each sent only to its own.
    public var janusCredentials = JanusCredentials()
    /// Jobs are persisted here and taken up again after a restart; nil: not persisted.
    public var stateDirectory: URL?
    public var pipelines: PipelineLibrary
    public var logger: Logger
    /// How long a job that lost Janus keeps trying to come back: a service outlives its Janus.
    public var rejoinTimeout: Duration = .seconds(600)
    /// Finished jobs are forgotten (memory and state folder; never their recordings) this many
    /// seconds after they ended.
    public var keepFinished: TimeInterval = 7 * 24 * 3600
    /// A connection idle this long (nothing received, no request in progress) is closed.
    public var idleTimeoutSeconds: Int64 = 30
    /// The largest request body taken; a bigger one is answered 413.
    public var maxBodyBytes = 64 * 1024
    /// Renders the process's metrics (Prometheus text) for `/metrics`; nil: none.
    public var metrics: (@Sendable () -> String)?
    /// `--database`: jobs, owners and leases in PostgreSQL, shared with other instances
    /// (the state folder then keeps no jobs); nil: one instance, jobs in the state folder.
    public var cluster: ClusterOptions?
    /// Told of each change of a job's state (uploads, webhooks); nil: nobody.
    public var events: (any JobEvents)?
    /// Signs every recording (checkpoints and the final manifest's proof); nil: nothing is signed.
    public var signingKey: SigningKey?
    /// Uploads finished recordings (`--storage`) and sends webhooks (`--webhook-url`); nil: neither.
    public var publishing: JobPublishing?
    /// STUN/TURN servers and ICE policy of every job (`--ice-server`…); never in a job's status.
    public var ice = ICEServers()

    public init(host: String, port: Int, tokens: TokenFile, roots: Roots, janus: String, janusAllowed: JanusAllowList,
                janusOptions: JanusSession.Options = .init(), stateDirectory: URL?, pipelines: PipelineLibrary, logger: Logger) {
        self.host = host
        self.port = port
        self.tokens = tokens
        self.roots = roots
        self.janusAllowed = janusAllowed
        self.janus = janus
        self.janusOptions = janusOptions
        self.stateDirectory = stateDirectory
        self.pipelines = pipelines
        self.logger = logger
    }

    /// What a job naming `url` connects with: only that Janus's own credentials.
    func janusOptions(for url: String) -> JanusSession.Options {
        janusCredentials.options(for: url, defaultJanus: janus, base: janusOptions)
    }
}
