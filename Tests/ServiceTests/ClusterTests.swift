import Foundation
import Testing
import TestSupport

/// `sfubot serve --database` end to end, with Janus and media: two instances on one PostgreSQL
/// (the test's own, `LocalPostgres`). Only the three that need a recorder's files stay here
/// (docs/testing.md, the cluster's tests): the SIGKILL failover, the iptables cut, uploads from
/// each owner's own disk. Every store transition is tested in ClusterStoreTests and its
/// neighbours, against the real PostgreSQL without media.
extension MediaScene {
@Suite struct ClusterTests {
    let key = String(repeating: "d4", count: 32)
    static let tone = 440.0

    struct Pair {
        let pg: LocalPostgres
        let dir: URL
        var a: ServeProcess
        var b: ServeProcess?

        func stop() async {
            a.process.signal(SIGKILL)
            b?.process.signal(SIGKILL)
            _ = await a.process.exit(within: .seconds(10))
            if let b { _ = await b.process.exit(within: .seconds(10)) }
            await pg.stop()
        }
    }

    /// Instance `name`; every one after "a" signs with a's key, as a cluster's instances share one
    /// (a recording's proof chain goes on across a failover).
    static func serve(_ name: String, port: Int, dir: URL, database: String, token: String? = nil, maxJobs: Int = 4,
                      outputRoot: URL? = nil, extra: [String] = []) async throws -> ServeProcess {
        let key = name == "a" ? [] : ["--signing-key", dir.appendingPathComponent("state-a/signing.key").path]
        return try await ServeProcess.start(port: port, in: dir, stateDir: dir.appendingPathComponent("state-\(name)"), token: token,
                                            outputRoot: outputRoot, extra: ["--database", database, "--instance-id", name, "--max-jobs", "\(maxJobs)"] + key + extra)
    }

    static func owners(_ status: [String: Any]) -> [[String: Any]] { status["owners"] as? [[String: Any]] ?? [] }

    /// A feed live with more than `frames` opened, in a file not named in `old`. The owner answers
    /// from memory; any other instance shows the status the owner last published, which after a
    /// takeover is the old owner's until the new run publishes its own.
    static func live(_ s: [String: Any], frames: Int, notIn old: Set<String> = []) -> Bool {
        ((s["feeds"] as? [[String: Any]]) ?? []).contains { feed in
            let file = URL(fileURLWithPath: feed["file"] as? String ?? "").lastPathComponent
            return (feed["live"] as? Bool == true) && (feed["framesOpened"] as? Int ?? 0) > frames && !old.contains(file)
        }
    }

    /// The files of a status's feeds, by name.
    static func files(_ s: [String: Any]) -> Set<String> {
        Set(((s["feeds"] as? [[String: Any]]) ?? []).compactMap { ($0["file"] as? String).map { URL(fileURLWithPath: $0).lastPathComponent } })
    }

    /// A player of the tone outside both instances, so that killing one does not silence it.
    func player(room: Int64, dir: URL) async throws -> ChildProcess {
        let tone = try await Audio.tone(Self.tone, seconds: 3, in: dir)
        return try SfubotProcess.start(["play", tone.path, "--loop", "--janus", Scene.janusURL!, "--room", "\(room)",
                                        "--key-hex", key, "--display", "9:Tone", "--duration", "90"])
    }

    /// Runs serve in a mount namespace of its own where `folder` is `disk`: a second machine
    /// with its own disk at the same path (the job's `out` is one absolute path for all).
    static func ownDisk(_ disk: URL, at folder: URL) -> [String] {
        ["/usr/bin/unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
         #"mount --bind "$1" "$2" && shift 2 && exec "$@""#, "sh", disk.path, folder.path]
    }
}
}
