import Foundation
import Testing
import TestSupport

/// `sfubot serve --database`: two instances on one PostgreSQL (the test's own, `LocalPostgres`).
/// A job runs on whichever has room, either answers for it, a DELETE reaches the owner, the
/// owner's death or its cut-off from the database hands the job to the other.
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

    @Test("a job POSTed to a full instance runs on the other; both show its owner; a DELETE to the non-owner stops it")
    func anyInstanceAnswers() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("cluster-any")
        let pg = try await LocalPostgres.start(port: 15431)
        var pair = Pair(pg: pg, dir: dir, a: try await Self.serve("a", port: 18521, dir: dir, database: pg.url(), maxJobs: 1))
        do {
            let a = pair.a
            let tone = try await Audio.tone(Self.tone, seconds: 3, in: dir)
            // Alone, A takes the playback and is full.
            let play = try await a.request("POST", "/v1/playbacks", json: ["room": room, "key": ["hex": key], "file": tone.path, "loop": true, "display": "9:Tone"])
            #expect(play.status == 201, "\(play.text)")
            let playID = try #require(try play.json()["id"] as? String)
            _ = try await a.waitFor("/v1/playbacks/\(playID)") { $0["owner"] as? String == "a" && $0["state"] as? String == "running" }
            // B has a disk of its own (issue 39 item 4): the recording POSTed to A with a relative
            // `out` runs below B's root (it used to fail at once, "outside --output-root").
            let bDisk = dir.appendingPathComponent("b-disk")
            try FileManager.default.createDirectory(at: bDisk, withIntermediateDirectories: true)
            let b = try await Self.serve("b", port: 18522, dir: dir, database: pg.url(), token: a.token, maxJobs: 1, outputRoot: bDisk)
            pair.b = b
            let migrations = try await pg.psql("SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_migrations")
            #expect(migrations == "1,2,3,4,5,6,7,8,9,10,11", "each step once, though two instances started")
            let roots = try await pg.psql("SELECT string_agg(instance || '=' || output_root, ' ' ORDER BY instance) FROM instances")
            #expect(roots == "a=\(dir.resolvingSymlinksInPath().path) b=\(bDisk.resolvingSymlinksInPath().path)", "each instance's root recorded")

            let out = bDisk.appendingPathComponent("rec")
            let rec = try await a.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": "rec"])
            #expect(rec.status == 201, "\(rec.text)")
            let id = try #require(try rec.json()["id"] as? String)
            let onB = try await b.waitFor("/v1/recordings/\(id)") { Self.live($0, frames: 100) }
            #expect(onB["owner"] as? String == "b", "\(onB)")
            let onA = try await a.request("GET", "/v1/recordings/\(id)").json()
            #expect(onA["owner"] as? String == "b" && Self.owners(onA).map { $0["instance"] as? String } == ["b"], "\(onA)")
            #expect(Self.owners(onA).first?["cause"] as? String == "new")
            let list = try await b.request("GET", "/v1/playbacks").list()
            #expect(list.map { $0["owner"] as? String } == ["a"], "\(list)")
            // Both full (the playback on A, the recording on B): a third POST is refused as one
            // instance refuses past its --max-jobs, and no job waits.
            let third = try await b.request("POST", "/v1/playbacks", json: ["room": room, "key": ["hex": key], "file": tone.path, "loop": true, "display": "9:Tone"])
            #expect(third.status == 429 && third.header("Retry-After") == "30", "\(third.status) \(third.text)")
            #expect(try await pg.psql("SELECT count(*) FROM jobs") == "2")
            let metrics = try await a.request("GET", "/metrics", auth: false).text
            let waiting = metrics.split(separator: "\n").first { $0.hasPrefix("sfubot_cluster_jobs_waiting ") }
            #expect(waiting.flatMap { Double($0.split(separator: " ").last ?? "") } == 0, "the waiting jobs counted: \(String(describing: waiting))")

            let asked = Date()
            let stopped = try await a.request("DELETE", "/v1/recordings/\(id)")
            #expect(stopped.status == 200, "\(stopped.text)")
            let final = try stopped.json()
            #expect(final["state"] as? String == "done", "\(final)")
            // When B ended the job, by the database's clock (one machine: the same clock).
            let endedAt = try await pg.psql("SELECT extract(epoch FROM ended) FROM job_owners WHERE job_id = '\(id)'")
            let took = (Double(endedAt) ?? 0) - asked.timeIntervalSince1970
            print("cluster: DELETE sent to the non-owner: the owner had finished the recording's files \(String(format: "%.2f", took)) s later")
            #expect(Self.owners(final).first?["endCause"] as? String == "finished", "\(final)")
            let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("manifest.json"))) as! [String: Any]
            #expect(manifest["ended"] != nil, "the owner finished the recording")
        } catch {
            await pair.stop()
            throw error
        }
        await pair.stop()
    }

    @Test("paused through the non-owner, the owner SIGKILLed: the job stays paused on the other, resumed there, one pause in the manifest")
    func pauseSurvivesAFailover() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("cluster-pause")
        let pg = try await LocalPostgres.start(port: 15435)
        var pair = Pair(pg: pg, dir: dir, a: try await Self.serve("a", port: 18525, dir: dir, database: pg.url()))
        let player = try await player(room: room, dir: dir)
        defer { player.signal(SIGKILL) }
        do {
            let a = pair.a
            let b = try await Self.serve("b", port: 18526, dir: dir, database: pg.url(), token: a.token)
            pair.b = b
            let out = dir.appendingPathComponent("rec")
            let rec = try await a.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": out.path])
            let id = try #require(try rec.json()["id"] as? String)
            let running = try await a.waitFor("/v1/recordings/\(id)") { Self.live($0, frames: 100) }
            let first = try #require(running["owner"] as? String)
            let (owner, other) = first == "a" ? (a, b) : (b, a)
            // Asked of the instance that does not run it: passed on by NOTIFY.
            let paused = try await other.request("POST", "/v1/recordings/\(id)/pause").json()
            #expect(paused["paused"] as? Bool == true, "\(paused)")
            owner.process.signal(SIGKILL)
            _ = await owner.process.exit(within: .seconds(10))
            let taken = try await other.waitFor("/v1/recordings/\(id)", within: .seconds(40)) { s in
                s["owner"] as? String != first && s["state"] as? String == "running"
            }
            #expect(taken["paused"] as? Bool == true, "still paused on the new owner: \(taken)")
            // Until the new owner's own feed has opened frames while paused (a loaded machine
            // subscribes seconds after the claim; a fixed second resumed before any arrived).
            _ = try await other.waitFor("/v1/recordings/\(id)", within: .seconds(30)) { Self.live($0, frames: 20, notIn: Self.files(running)) }
            let resumed = try await other.request("POST", "/v1/recordings/\(id)/resume").json()
            #expect(resumed["paused"] as? Bool == false, "\(resumed)")
            _ = try await other.waitFor("/v1/recordings/\(id)", within: .seconds(20)) { Self.live($0, frames: 100) }
            let final = try await other.request("DELETE", "/v1/recordings/\(id)").json()
            #expect(final["state"] as? String == "done", "\(final)")
            let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("manifest.json"))) as! [String: Any]
            let pauses = (manifest["pauses"] as? [[String: Any]]) ?? []
            #expect(pauses.count == 1 && pauses[0]["end"] != nil, "one pause across the failover, closed by the resume: \(pauses)")
            let dropped = ((manifest["feeds"] as? [[String: Any]]) ?? []).reduce(0) { $0 + ($1["paused_frames"] as? Int ?? 0) }
            #expect(dropped > 0, "the new owner opened and dropped frames while paused")
        } catch {
            await pair.stop()
            throw error
        }
        await pair.stop()
    }

    @Test("a playback taken over after a SIGKILL goes on from where it was in its file")
    func playbackResumesAtItsPosition() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("cluster-play")
        let pg = try await LocalPostgres.start(port: 15434)
        var pair = Pair(pg: pg, dir: dir, a: try await Self.serve("a", port: 18527, dir: dir, database: pg.url()))
        do {
            let a = pair.a
            let b = try await Self.serve("b", port: 18528, dir: dir, database: pg.url(), token: a.token)
            pair.b = b
            let tone = try await Audio.tone(Self.tone, seconds: 30, in: dir)
            let play = try await a.request("POST", "/v1/playbacks", json: ["room": room, "key": ["hex": key], "file": tone.path, "display": "9:Tone"])
            let id = try #require(try play.json()["id"] as? String)
            func position() async throws -> Double? { Double(try await pg.psql("SELECT position_seconds FROM jobs WHERE id = '\(id)'")) }
            let deadline = ContinuousClock.now + .seconds(40)
            while (try await position() ?? 0) < 5, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(300)) }
            let first = try await pg.psql("SELECT owner FROM jobs WHERE id = '\(id)'")
            let (owner, other) = first == "a" ? (a, b) : (b, a)
            owner.process.signal(SIGKILL)
            _ = await owner.process.exit(within: .seconds(10))
            let before = try #require(try await position())
            #expect(before >= 5)
            // The first position the next owner reports: past where the first one was, not near 0.
            var next: Double?
            while next == nil, ContinuousClock.now < deadline + .seconds(20) {
                if let p = try await position(), p != before { next = p }
                try await Task.sleep(for: .milliseconds(200))
            }
            print("cluster: playback at \(String(format: "%.2f", before)) s when its owner was killed; the next owner's first position \(next.map { String(format: "%.2f", $0) } ?? "none")")
            #expect((next ?? 0) >= before - 1, "the playback went on from its position")
            let status = try await other.request("GET", "/v1/playbacks/\(id)").json()
            #expect(status["owner"] as? String != first && Self.owners(status).count == 2, "\(status)")
        } catch {
            await pair.stop()
            throw error
        }
        await pair.stop()
    }

    @Test("the owner cut off from the database (iptables): it stops writing before its lease ends, then the other carries on")
    func fencedWhenCutOff() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("cluster-cut")
        // A reaches the database on 127.0.0.2, B on 127.0.0.1: the rule cuts A alone.
        let pg = try await LocalPostgres.start(port: 15433, addresses: ["127.0.0.1", "127.0.0.2"])
        var pair = Pair(pg: pg, dir: dir, a: try await Self.serve("a", port: 18525, dir: dir, database: pg.url(address: "127.0.0.2")))
        let player = try await player(room: room, dir: dir)
        defer { player.signal(SIGKILL) }
        let rule = ["INPUT", "-p", "tcp", "-d", "127.0.0.2", "--dport", "15433", "-j", "DROP"]
        do {
            let a = pair.a
            let (id, out, mine) = try await recordOnAThenStartB(&pair, room: room, bPort: 18526)
            let b = try #require(pair.b)
            let cut = try await ChildProcess.run("/usr/sbin/iptables", ["-I"] + rule)
            #expect(cut.status == 0, "\(cut.errText)")
            let taken = try await b.waitFor("/v1/recordings/\(id)", within: .seconds(40)) { $0["owner"] as? String == "b" && Self.live($0, frames: 50) }
            _ = try await ChildProcess.run("/usr/sbin/iptables", ["-D"] + rule)
            // Dropped packets end no session on the server: B went by the lease.
            #expect(Self.owners(taken).last?["cause"] as? String == "failover" && Self.owners(taken).first?["endCause"] as? String == "lease expired", "\(Self.owners(taken))")
            // When B took it, by the database's clock (one machine: the files' clock too).
            let since = try await pg.psql("SELECT extract(epoch FROM started) FROM job_owners WHERE job_id = '\(id)' AND owner = 'b'")
            let bStarted = Date(timeIntervalSince1970: try #require(Double(since)))
            for name in mine {
                let attributes = try FileManager.default.attributesOfItem(atPath: out.appendingPathComponent(name).path)
                let written = try #require(attributes[.modificationDate] as? Date)
                print("cluster: A's \(name) last written \(String(format: "%.2f", bStarted.timeIntervalSince(written))) s before B took the job")
                #expect(written < bStarted, "\(name) written by A after B took the job")
            }
            #expect(try await a.metric("sfubot_cluster_jobs_fenced_total") == 1)
            // Its own session's unanswered ping usually stops the job before a renewal is missed.
            print("cluster: A's missed lease renewals: \(try await a.metric("sfubot_cluster_lease_renewals_missed_total"))")
            // Back on the database, A sees the job as B's.
            let seen = try await a.waitFor("/v1/recordings/\(id)", within: .seconds(20)) { $0["owner"] as? String == "b" }
            #expect(Self.owners(seen).map { $0["instance"] as? String } == ["a", "b"], "\(seen)")
            let final = try await a.request("DELETE", "/v1/recordings/\(id)").json()
            #expect(final["state"] as? String == "done", "\(final)")
        } catch {
            _ = try? await ChildProcess.run("/usr/sbin/iptables", ["-D"] + rule)
            await pair.stop()
            throw error
        }
        await pair.stop()
    }
}
}
