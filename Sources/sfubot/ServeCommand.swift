import ArgumentParser
import Bot
import Foundation
import Proof
import Janus
import Logging
import Service
import Telemetry

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run recordings, playbacks and relays as jobs behind an HTTP API (a long-running service).",
        discussion: """
            POST /v1/recordings, /v1/playbacks and /v1/relays start jobs (GET lists them or shows one with its \
            state, feeds and counters; DELETE stops one and finishes its files). Every /v1 request \
            carries `Authorization: Bearer <token>` (the token file must be 0600). /healthz says the \
            process is alive, /readyz whether Janus answers, /metrics is Prometheus text, and \
            /openapi.json describes the API. Jobs that lose Janus keep coming back for \
            --rejoin-timeout. With --state-dir, jobs are saved there and the ones running when \
            the service stopped (a crash, a restart) are taken up again: recordings continue \
            in new segment files, the time away a gap in their manifest. SIGTERM or SIGINT: no \
            new requests, every job finishes its files, exit 0.

            Jobs are confined: a recording's `out` and `mix` lie below --output-root, a \
            playback's `file` and any `key.file` below --media-root (a path relative to the \
            root, or absolute inside it; no `..`; no symlink is followed; only regular files \
            are read; an existing file is never overwritten and a new recording takes a new or \
            empty folder). Without these, --state-dir's recordings/ and media/ are the roots; \
            without either, serve does not start. Jobs may name only the Janus servers of \
            --janus and --janus-allow, and each of them gets --api-secret and --janus-token. \
            A relay's `to` must be a destination --relay-allow names.
            """)

    @Option(help: ArgumentHelp("Address to listen on: host:port (other than 127.0.0.1 only when you mean it).", valueName: "host:port"))
    var listen = "127.0.0.1:8480"

    @Option(help: ArgumentHelp("File holding the bearer token of the API (mode 0600); read again on SIGHUP and when it changes (the old token then stops working).", valueName: "path"))
    var tokenFile: String

    // --janus (for jobs that name none, and /readyz), --api-secret, --janus-token.
    @OptionGroup var server: JanusOptions

    @Option(help: ArgumentHelp("Folder where jobs are saved, to take them up again after a restart.", valueName: "dir"))
    var stateDir: String?

    @Option(help: ArgumentHelp("PostgreSQL holding the jobs, their owners and leases, shared by every instance given the same URL (docs/cluster.md): postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require]; without a password in it, PGPASSWORD's (out of the process list). Any instance answers for any job; a job runs on one with room; when its owner dies another takes it over. Without it, jobs are kept in --state-dir for this instance alone.", valueName: "url"))
    var database: String?

    @Option(help: ArgumentHelp("This instance's name among those sharing --database (default: the host name and a random suffix).", valueName: "name"))
    var instanceID: String?

    @Option(help: ArgumentHelp("With --database: how long a job stays this instance's without a renewal. Renewed every quarter of it; a job whose renewals fail stops writing when 3/8 of it are left, and another instance takes it once it has run out.", valueName: "seconds"))
    var leaseSeconds: Double = 4

    @Option(help: ArgumentHelp("Sign every recording with this key (PKCS#8 PEM, P-256 or Ed25519, 0600): checkpoints in proof.jsonl, a signed proof in manifest.json (`sfubot verify`). Default with --state-dir: <state-dir>/signing.key, made (P-256, 0600) on first start; its fingerprint is logged at start. Without either, nothing is signed.", valueName: "file"))
    var signingKey: String?

    @Option(help: ArgumentHelp("Folder below which recordings (`out`, `mix`) are written; made 0700 if missing, not its parents (default: <state-dir>/recordings).", valueName: "dir"))
    var outputRoot: String?

    @Option(help: ArgumentHelp("Folder below which playback files and key files are read; made 0700 if missing, not its parents (default: <state-dir>/media).", valueName: "dir"))
    var mediaRoot: String?

    @Option(help: ArgumentHelp("Another Janus WebSocket URL jobs may name (repeatable); --janus always may. It gets only the credentials --janus-credentials gives it.", valueName: "url"))
    var janusAllow: [String] = []

    @Option(help: ArgumentHelp("A destination relay jobs may send a call's decrypted media to (repeatable): scheme, host and port, and a path its streams lie under, e.g. rtmp://live.example:1935/app, srt://10.0.0.5:9000, wss://asr.example/speakers (speaker streams). Without it relay jobs are refused.", valueName: "url"))
    var relayAllow: [String] = []

    @Option(help: ArgumentHelp("A 0600 JSON file of credentials per allowed Janus: {\"wss://janus-b:8989\": {\"api_secret\": \"…\", \"token\": \"…\"}}. Each Janus is sent only its own; --api-secret and --janus-token go to --janus alone.", valueName: "file"))
    var janusCredentials: String?

    @Option(help: ArgumentHelp("Jobs at most at once; past it POST answers 429 and /readyz 503 (default: 25 per core: an audio playback encodes live, Opus about 3 % of a core (PITFALLS.md), and a recording of a few publishers costs about as much (docs/performance.md: about 200 participants recorded per core), so 25 audio jobs fill most of a core; a video playback encodes x264, 6-8 %: lower it for those).", valueName: "n"))
    var maxJobs: Int?

    @Option(help: ArgumentHelp("Forget finished jobs this long after they ended (their records in memory and in --state-dir; never their recordings).", valueName: "seconds"))
    var keepFinished: Double = 7 * 24 * 3600

    @OptionGroup var ice: ICEOptions
    @OptionGroup var comeback: ComebackOptions
    @OptionGroup var pipeline: PipelineOptions
    @OptionGroup var log: LogOptions
    // Also on the API's own port; --metrics-port adds a listener without the API on it.
    @OptionGroup var metricsOptions: MetricsOptions
    @OptionGroup var publishing: PublishingOptions

    func validate() throws {
        _ = try Self.address(listen)
        do { _ = try JanusAllowList([server.janus] + janusAllow) } catch { throw ValidationError(error.description) }
        do { _ = try RelayAllowList(relayAllow) } catch { throw ValidationError(error.description) }
        try OptionCheck.seconds(keepFinished, "--keep-finished", zeroAllowed: true)
        if instanceID != nil, database == nil { throw ValidationError("--instance-id names an instance sharing --database: give --database too") }
        if let instanceID, instanceID.isEmpty || instanceID.count > 100 { throw ValidationError("--instance-id takes 1 to 100 characters") }
        guard leaseSeconds >= 1, leaseSeconds <= 600 else { throw ValidationError("--lease-seconds takes 1 to 600, got \(leaseSeconds)") }
        if let maxJobs, maxJobs < 1 { throw ValidationError("--max-jobs takes 1 or more, got \(maxJobs)") }
        if outputRoot == nil || mediaRoot == nil, stateDir == nil {
            throw ValidationError("give --output-root and --media-root, or --state-dir (whose recordings/ and media/ become them): jobs only use files below them")
        }
    }

    /// `host:port` (IPv6 in brackets), the port 0 to 65535 (0: any free port).
    static func address(_ text: String) throws(ValidationError) -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":") else { throw ValidationError("--listen takes host:port, got \(text)") }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            throw ValidationError("--listen takes host:port with a port of 0 to 65535, got \(text)")
        }
        return (host, port)
    }

    func run() async throws {
        do {
            let (host, port) = try Self.address(listen)
            let logger = log.logger("sfubot.serve")
            SRTPPreload.run(logger, level: .info)
            let metricsServer = await metricsOptions.start(logger: logger)
            defer { metricsServer?.stop() }
            var janusOptions = server.sessionOptions
            janusOptions.reclaimWindow = .zero
            let roots = try Roots.configured(output: outputRoot, media: mediaRoot, stateDirectory: stateDir)
            for root in [roots.output, roots.media] { if let weakness = root.weakness { logger.warning("\(weakness)") } }
            var config = ServeConfiguration(
                host: host, port: port, tokens: try readToken(logger: logger), roots: roots, janus: server.janus,
                janusAllowed: try JanusAllowList([server.janus] + janusAllow), janusOptions: janusOptions,
                stateDirectory: stateDir.map { URL(fileURLWithPath: $0) }, pipelines: try pipeline.library(),
                logger: logger)
            let registry = Telemetry.bootstrap()
            config.metrics = { Telemetry.render(registry) }
            if let maxJobs { config.maxJobs = maxJobs }
            config.relayAllowed = try RelayAllowList(relayAllow)
            if let janusCredentials {
                do { config.janusCredentials = try JanusCredentials(path: janusCredentials, allowed: config.janusAllowed) } catch {
                    throw CLIFailure(error.description, code: .config)
                }
            }
            config.keepFinished = keepFinished
            if let database {
                var cluster = ClusterOptions(database: database, instanceID: instanceID)
                cluster.lease = .milliseconds(Int64(leaseSeconds * 1000))
                config.cluster = cluster
            }
            config.signingKey = try Self.signer(signingKey, stateDir: stateDir, logger: logger)
            config.rejoinTimeout = comeback.duration
            config.publishing = try publishing.make(stateDirectory: stateDir, logger: logger)
            config.ice = try ice.servers()
            if host != "127.0.0.1" && host != "localhost" && host != "::1" {
                logger.warning("listening on \(host), not only on this machine: anyone who can reach it and holds the token can record calls")
            }
            try await Service.Serve.run(config)
        } catch let e as CLIFailure {
            e.exit()
        } catch let e as ServeError {
            CLIFailure(e.description, code: .config).exit()
        } catch let e as BotError {
            CLIFailure(e).exit()
        }
    }

    /// --signing-key, or <state-dir>/signing.key (made on first start).
    static func signer(_ path: String?, stateDir: String?, logger: Logger) throws(CLIFailure) -> SigningKey? {
        do {
            let key: SigningKey
            if let path {
                key = try SigningKey(contentsOfFile: path)
            } else if let stateDir {
                try? FileManager.default.createDirectory(atPath: stateDir, withIntermediateDirectories: true)
                key = try SigningKey.loadOrCreate((stateDir as NSString).appendingPathComponent("signing.key"))
            } else {
                return nil
            }
            logger.info("recordings are signed by the key with fingerprint \(key.publicKey.fingerprint)")
            return key
        } catch {
            throw CLIFailure("--signing-key: \(error)", code: .badKey)
        }
    }

    /// The token, from a file only its owner can read: anyone who holds it can record calls.
    private func readToken(logger: Logger) throws(CLIFailure) -> TokenFile {
        do { return try TokenFile(path: tokenFile, logger: logger) } catch {
            throw CLIFailure(error.description, code: error.unreadable ? .noInput : .config)
        }
    }
}
