import ArgumentParser
import Bot
import FrameCrypto
import Foundation
import GStreamerKit
import Janus
import LoadTest
import Logging
import Telemetry

struct Load: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load-test a room with many encrypted bots in one process, and measure it.",
        subcommands: [LoadRunCommand.self, LoadMerge.self],
        defaultSubcommand: LoadRunCommand.self)
}

struct LoadRunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run publisher and subscriber bots against a room (the default of `sfubot load`).",
        discussion: """
            Media is encoded once and shared: each publisher only seals its frames (its own nonces), \
            packetizes and sends them; each subscriber is a multistream subscriber that opens every \
            frame. Bots join at --ramp per second; a failed join is retried with backoff. Once every \
            bot has joined or given up the room is held for --duration seconds, then the bots leave. \
            Ctrl-C stops early and still writes the report. Exit status: 0 if the room held, 1 if \
            not (the report says why), others as for every sfubot command.
            """)

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var key: KeyOptions

    @Option(help: "Publisher bots (over all shards).")
    var publishers = 1
    @Option(help: "Subscriber bots (over all shards).")
    var subscribers = 0
    @OptionGroup var video: LoadVideoOptions
    @Option(help: ArgumentHelp("Audio file the publishers send, looped (default: a 440 Hz tone).", valueName: "file"))
    var media: String?
    @Option(help: ArgumentHelp("Seconds the room is held once every bot has joined; 0: until Ctrl-C.", valueName: "seconds"))
    var duration = 60.0
    @Option(help: ArgumentHelp("Bots started per second.", valueName: "per-second"))
    var ramp = 10.0
    @Option(help: ArgumentHelp("Feeds each subscriber takes (default: all).", valueName: "k"))
    var subscribeLimit: Int?
    @Option(help: ArgumentHelp("Run shard I of N (bots dealt round-robin); merge the reports with `sfubot load merge`.", valueName: "I/N"))
    var shard = "0/1"
    @Option(help: ArgumentHelp("Write summary.json, bots.csv, raw.json, report.html and PNG plots here.", valueName: "dir"))
    var report: String?
    @OptionGroup var metricsOptions: MetricsOptions
    @Option(help: "Retries for a bot that fails to join.")
    var retries = 3
    @Option(help: ArgumentHelp("Seconds a join may take before it is retried.", valueName: "seconds"))
    var joinTimeout = 20.0
    @Option(help: ArgumentHelp("Seconds between reads of each bot's webrtcbin statistics.", valueName: "seconds"))
    var statsInterval = 2.0
    @Option(help: ArgumentHelp("Threads that push the shared media to publishers (default: one per core).", valueName: "n"))
    var fanOutThreads: Int?
    @Option(help: ArgumentHelp(
        "How publishers send audio RTP: direct (SRTP and ICE send from the payloader's thread, with the keys and agent of the bot's webrtcbin; no sender reports, so no publisher RTT) or webrtcbin (its whole send chain, as play does).",
        valueName: "direct|webrtcbin"))
    var sendPath = SendPathArgument.direct
    @Option(help: ArgumentHelp(
        "How subscribers take packets in: direct (nicesrc's thread carries each packet on past webrtcbin's receive queue once ICE is up, and an audio packet's frame is opened on webrtcbin's pad, no depayloader) or webrtcbin (its receive queue's thread and a depayloader per stream, as record does).",
        valueName: "direct|webrtcbin"))
    var receivePath = SendPathArgument.direct
    @Option(help: ArgumentHelp(
        "Break things during the steady window, at rates per minute: ws-drop (each bot's WebSocket closes) and ice-restart (its PeerConnection is replaced) per bot, key-rotation (a new call key, current 3 s after it is given to every bot) for the run; e.g. ws-drop=2,ice-restart=1,key-rotation=1. The report shows per kind the time from fault to the first decrypted frame, and any bot that did not recover.",
        valueName: "kind=rate,..."))
    var chaos: String?
    @Flag(help: "Per-sender keys: every publisher bot seals with a key of its own, derived from the call key (--key-hex/--key-file) and its id p<i> (display p<i>:sfubot-load); every subscriber holds the whole map. With --key-map instead, publisher p<i> seals with the map's newest key for \"p<i>\".")
    var perSenderKeys = false

    /// Most bots of each role one run may plan (over all shards).
    static let maxBots = 100_000

    func validate() throws {
        guard LoadPlan.Shard(shard) != nil else { throw ValidationError("--shard takes I/N with 0 ≤ I < N, e.g. 0/4") }
        try OptionCheck.count(publishers, "--publishers", in: 0...Self.maxBots)
        try OptionCheck.count(subscribers, "--subscribers", in: 0...Self.maxBots)
        guard publishers + subscribers > 0 else { throw ValidationError("give at least one --publishers or --subscribers") }
        guard ramp.isFinite, ramp > 0 else { throw ValidationError("--ramp takes a number of bots per second above 0, got \(ramp)") }
        try OptionCheck.seconds(duration, "--duration", zeroAllowed: true)
        try OptionCheck.count(subscribeLimit, "--subscribe-limit", in: 1...Self.maxBots)
        try OptionCheck.count(retries, "--retries", in: 0...1000)
        try OptionCheck.seconds(joinTimeout, "--join-timeout")
        try OptionCheck.seconds(statsInterval, "--stats-interval")
        // Each is a thread of its own; 0 would leave the shared media with no thread to push it.
        try OptionCheck.count(fanOutThreads, "--fan-out-threads", in: 1...256)
        if perSenderKeys, key.keyHex == nil && key.keyFile == nil {
            throw ValidationError("--per-sender-keys derives each bot's key from the call key: give --key-hex or --key-file")
        }
        if let chaos {
            let plan: ChaosPlan
            do { plan = try ChaosPlan(parsing: chaos) } catch { throw ValidationError("--chaos: \(error)") }
            if plan.rate(.keyRotation) > 0 {
                // Each shard is its own process with its own rings: a rotation in one would
                // leave the others' subscribers without the key.
                guard LoadPlan.Shard(shard)?.count == 1 else { throw ValidationError("--chaos key-rotation works only with one shard") }
                guard !key.noE2ee else { throw ValidationError("--chaos key-rotation needs a call key (not --no-e2ee)") }
                // Rotation replaces the one call key; per-sender keys do not rotate here.
                guard !perSenderKeys, key.keyMap == nil else { throw ValidationError("--chaos key-rotation works with one call key, not with per-sender keys") }
            }
        }
    }

    /// The run's protection: the call key, a key map, or (`--per-sender-keys`) a map derived
    /// from the call key with one key per publisher.
    func loadProtection() async throws -> FrameProtection {
        let protection = try await key.protectionOffPool()
        if case .indexed = protection, perSenderKeys {
            throw CLIFailure("--per-sender-keys derives ECall keys; with --frame-format \(key.format.frameFormat.rawValue) give --key-map", code: .config)
        }
        guard perSenderKeys else { return protection }
        guard case .e2ee(let ring) = protection, let callKey = ring.sealingKey else { return protection }
        return .perSender(KeyMap.derived(from: callKey, senders: (0..<publishers).map(LoadPlan.senderID)))
    }

    func run() async throws {
        let logger = connection.logger("sfubot.load")
        // Asked for and not served would look like a run with no figures: fail before joining.
        let server = await metricsOptions.start(logger: logger)
        let library: PipelineLibrary
        do { library = try PipelineLibrary(directory: connection.pipelines) } catch { CLIFailure(error).exit() }
        if let media, !FileManager.default.isReadableFile(atPath: media) { CLIFailure(.inputNotFound(media)).exit() }
        // Before any SRTP element exists. Per-packet cost depends on it: the figures say which
        // SRTP library they are made with.
        SRTPPreload.run(logger, level: .info)
        GStreamer.initialize()
        var plan: LoadPlan
        do {
            plan = LoadPlan(janusURL: connection.janus, room: connection.room, publishers: publishers, subscribers: subscribers,
                            protection: try await loadProtection(), library: library, logger: logger)
        } catch let e as CLIFailure { e.exit() }
        plan.janus = connection.sessionOptions
        plan.ice = try connection.ice.servers()
        // Load bots open no TLS bridges (record, play, serve and agent do): refused, never handed
        // to libnice, which would send TURN to it in the clear.
        if plan.ice.servers.contains(where: { $0.scheme == .turns }) {
            throw ValidationError("sfubot load does not take turns: servers yet: use turn:HOST:PORT?transport=tcp or ?transport=udp")
        }
        plan.video = video.video
        plan.videoSettings = try video.settings()
        plan.decodeEvery = video.decodeEvery
        plan.media = media
        plan.duration = try duration > 0 ? OptionCheck.seconds(duration, "--duration") : nil
        plan.ramp = ramp
        plan.subscribeLimit = subscribeLimit
        plan.shard = LoadPlan.Shard(shard)!
        plan.retries = retries
        plan.joinTimeout = try OptionCheck.seconds(joinTimeout, "--join-timeout")!
        plan.statsInterval = try OptionCheck.seconds(statsInterval, "--stats-interval")!
        plan.fanOutGroups = fanOutThreads
        plan.sendPath = sendPath.plan
        plan.receivePath = receivePath == .direct ? .direct : .webrtcbin
        plan.rejoinTimeout = connection.sessionOptions.reclaimWindow
        plan.chaos = try chaos.map { try ChaosPlan(parsing: $0) }
        let display = LiveDisplay()
        let metrics = server.map { _ in LoadMetrics(shard: plan.shard.index) }
        let run = LoadRun(plan: plan) { figures in
            display.show(figures)
            metrics?.update(figures)
        }
        let result: LoadResult
        do {
            // Bots leave together at the end; the report needs them all to have left.
            result = try await runCancellableOnSignals(grace: .seconds(60)) { try await run.run() }
        } catch let e as CLIFailure {
            display.finish()
            server?.stop()
            e.exit()
        } catch {
            display.finish()
            server?.stop()
            CLIFailure("load test could not start: \(error)", code: .unreachable).exit()
        }
        display.finish()
        server?.stop()
        let summary: LoadSummary
        if let report {
            do { summary = try await LoadReport.write(result, to: URL(fileURLWithPath: report)) } catch {
                CLIFailure("cannot write the report in \(report): \(error)", code: .cannotWrite).exit()
            }
            print("report: \(URL(fileURLWithPath: report).appendingPathComponent("report.html").path)")
        } else {
            summary = LoadSummary(result)
        }
        LoadVerdict.print(summary)
        if !summary.held { throw ExitCode(1) }
    }
}

struct LoadMerge: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Join the reports of several shards (`--shard I/N`) into one.")

    @Argument(help: ArgumentHelp("Report folders of the shards.", valueName: "dir"))
    var directories: [String]

    @Option(help: ArgumentHelp("Folder for the merged report.", valueName: "dir"))
    var out: String

    func run() async throws {
        do {
            let merged = try LoadReport.merge(directories.map { URL(fileURLWithPath: $0) })
            let summary = try await LoadReport.write(merged, to: URL(fileURLWithPath: out))
            print("report: \(URL(fileURLWithPath: out).appendingPathComponent("report.html").path)")
            LoadVerdict.print(summary)
            if !summary.held { throw ExitCode(1) }
        } catch let e as LoadReport.MergeError {
            CLIFailure(e.description, code: .noInput).exit()
        }
    }
}

enum LoadVerdict {
    /// Per role, each join phase's own duration and when it was reached: p50/p95/p99 in ms.
    static func printJoinPhases(_ s: LoadSummary) {
        for role in ["publisher", "subscriber"] {
            guard let phases = s.joinPhases[role] else { continue }
            Swift.print("join phases, \(role)s (ms; took = the phase alone, at = since the attempt began): p50 / p95 / p99")
            for name in JoinPhases.names {
                guard let t = phases[name], let at = t.at, let took = t.took else { continue }
                Swift.print("  " + name.padding(toLength: 16, withPad: " ", startingAt: 0) + String(format: " took %6.0f %6.0f %6.0f   at %6.0f %6.0f %6.0f",
                                   took.p50 * 1000, took.p95 * 1000, took.p99 * 1000, at.p50 * 1000, at.p95 * 1000, at.p99 * 1000))
            }
        }
    }

    static func print(_ s: LoadSummary) {
        let first = s.joinSeconds["first_decrypted"].map { String(format: "%.2f s p50, %.2f s p95", $0.p50, $0.p95) } ?? "–"
        Swift.print("bots: \(s.bots.joined) joined, \(s.bots.failed) failed, \(s.bots.lost) lost, \(s.bots.retries) retries; first decrypted frame \(first)")
        printJoinPhases(s)
        if let k = s.joinSeconds["first_keyframe"] {
            Swift.print(String(format: "first picture (keyframe opened of every video feed): %.2f s p50, %.2f s p95 after the join began (%d subscribers)", k.p50, k.p95, k.n))
        }
        Swift.print("frames: \(s.publishers.framesSealed) sent, \(s.subscribers.framesOpened) decrypted, \(s.subscribers.decryptFailuresTotal) failed to decrypt")
        if let k = s.publishers.keyframes {
            Swift.print("video keyframes: \(k.sent) IDRs sent; Janus asked \(k.requests) times (PLI/FIR), \(k.answered) answered by the next IDR, the slowest after \(Int(k.slowestAnswerMs)) ms")
        }
        if let n = s.publishers.nacks {
            Swift.print("video NACKs: \(n.nacks) received asking for \(n.requested) packets; \(n.retransmitted) retransmitted, \(n.unavailable) no longer in the history")
        }
        for p in s.process {
            Swift.print(String(format: "process %d: %.2f cores, %.1f µs/packet (%.1f in the kernel), %.2f MB RSS/bot, %.1f threads/bot", p.shard,
                               p.cpuCores ?? .nan, p.cpuMicrosecondsPerPacket ?? .nan, p.kernelMicrosecondsPerPacket ?? .nan,
                               p.rssPerBotMB ?? .nan, p.threadsPerBot ?? .nan)
                         + (p.sendPath.map { ", audio sent \($0)" } ?? "")
                         + ((p.directFallbacks ?? 0) > 0 ? " (\(p.directFallbacks!) publisher attempts fell back to webrtcbin)" : "")
                         + (p.receivePath.map { ", packets received \($0)" } ?? "")
                         + (p.receivedPastQueue.map { " (\($0) past webrtcbin's receive queue, \(p.receivedThroughQueue ?? 0) through it)" } ?? ""))
        }
        if let ice = s.ice { Swift.print(ice.line) }
        let c = s.comebacks
        if c.connectionDrops + c.rejoins + c.mediaRestarts > 0 || s.chaos != nil {
            Swift.print("comebacks: \(c.connectionDrops) WebSocket drops (\(c.claims) claimed), \(c.rejoins) rejoins, \(c.mediaRestarts) media restarts, \(String(format: "%.1f", c.gapSeconds)) s of gap, \(c.notBack.count) bot(s) not back")
        }
        for (kind, k) in (s.chaos ?? [:]).sorted(by: { $0.key < $1.key }) {
            let d = k.seconds.map { String(format: "min %.3f, p50 %.3f, p95 %.3f, max %.3f s", $0.min, $0.p50, $0.p95, $0.max) } ?? "–"
            Swift.print("chaos \(kind): \(k.count) faults, \(k.recovered) recovered; fault → first decrypted frame: \(d)")
        }
        Swift.print(s.held ? "the room held" : "the room did not hold: " + s.problems.joined(separator: "; "))
    }
}

/// `--send-path` and `--receive-path`: LoadPlan.SendPath/ReceivePath as an argument (a public
/// type of another module cannot take ArgumentParser's protocol here).
enum SendPathArgument: String, ExpressibleByArgument, CaseIterable {
    case direct, webrtcbin
    var plan: LoadPlan.SendPath { self == .direct ? .direct : .webrtcbin }
}
