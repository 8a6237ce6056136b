import Bot
import FrameCrypto
import Foundation
import Janus
import LoadTest
import Testing
import TestSupport

extension MediaScene {
@Suite struct LoadRunTests {
    static func plan(room: Int64, publishers: Int, subscribers: Int, ring: KeyRing, seconds: Int, shard: LoadPlan.Shard = .init(index: 0, count: 1)) throws -> LoadPlan {
        var plan = LoadPlan(janusURL: Scene.janusURL!, room: room, publishers: publishers, subscribers: subscribers,
                            protection: .e2ee(ring), library: try PipelineLibrary(), logger: Scene.logger)
        plan.duration = .seconds(seconds)
        plan.ramp = 20
        plan.shard = shard
        plan.statsInterval = .seconds(1)
        return plan
    }

    static func summary(in dir: URL) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("summary.json"))) as! [String: Any]
    }

    /// bots.csv as a user reads it: one dictionary per row, by column name.
    static func rows(in dir: URL) throws -> [[String: String]] {
        let lines = try String(contentsOf: dir.appendingPathComponent("bots.csv"), encoding: .utf8).split(separator: "\n")
        let header = lines[0].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        return lines.dropFirst().map { line in
            Dictionary(uniqueKeysWithValues: zip(header, line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)))
        }
    }

    // Both paths: direct (SRTP and ICE send past webrtcbin; received packets past its queue,
    // audio opened on its pad) must give Janus packets it accepts and subscribers frames they
    // open, exactly as webrtcbin's chains do.
    @Test("5 publishers × 5 subscribers, E2EE: every subscriber decrypts every publisher, counts agree",
          arguments: zip(LoadPlan.SendPath.allCases, LoadPlan.ReceivePath.allCases))
    func fiveByFive(sendPath: LoadPlan.SendPath, receivePath: LoadPlan.ReceivePath) async throws {
        let dir = try Scene.tempDirectory("load")
        var plan = try Self.plan(room: try await Scene.createRoom(), publishers: 5, subscribers: 5, ring: KeyRing(current: .random()), seconds: 6)
        plan.sendPath = sendPath
        plan.receivePath = receivePath
        let result = try await LoadRun(plan: plan).run()
        _ = try await LoadReport.write(result, to: dir)

        let summary = try Self.summary(in: dir)
        #expect(summary["held"] as? Bool == true, "problems: \(summary["problems"] ?? "")")
        let process = try #require((summary["process"] as? [[String: Any]])?.first)
        #expect(process["sendPath"] as? String == sendPath.rawValue)
        #expect(process["directFallbacks"] as? Int == 0, "publishers that could not send directly")
        #expect(process["receivePath"] as? String == receivePath.rawValue)
        let past = try #require(process["receivedPastQueue"] as? Int), through = try #require(process["receivedThroughQueue"] as? Int)
        if receivePath == .direct {
            // One packet per subscriber takes the queue (it brings dtlssrtpdec the stream's
            // events); nothing holds the receive side once ICE is up.
            #expect(past > 5 * 5 * 200 && through <= 5 * 3, "past the queue \(past), through it \(through)")
        } else {
            #expect(past == 0 && through == 0, "no shortcut on webrtcbin's path: \(past), \(through)")
        }
        let rows = try Self.rows(in: dir)
        #expect(rows.count == 10)
        let publishers = rows.filter { $0["role"] == "publisher" }, subscribers = rows.filter { $0["role"] == "subscriber" }
        for p in publishers {
            #expect(p["state"] == "joined")
            // Frames are sealed from the start but sent only once the path is up: sent ≤ sealed.
            let sent = Int(p["packets_sent"]!)!, sealed = Int(p["frames_sealed"]!)!
            #expect(sent > 200 && sent <= sealed, "publisher \(p["index"]!): \(sent) packets sent, \(sealed) frames sealed")
            // Janus's receiver reports reach the report on both paths (loopback: nothing lost).
            #expect(p["remote_loss_pct"].flatMap(Double.init) == 0, "publisher \(p["index"]!): remote loss '\(p["remote_loss_pct"] ?? "")'")
        }
        for s in subscribers {
            #expect(s["state"] == "joined" && s["feeds"] == "5" && s["feeds_receiving"] == "5")
            #expect(s["decrypt_failures"] == "0")
            // One Opus frame per RTP packet: what webrtcbin counted ≈ what the bot decrypted.
            let packets = Double(s["packets_received"]!)!, opened = Double(s["frames_opened"]!)!
            #expect(opened > 1000 && abs(packets - opened) <= 0.02 * packets, "subscriber \(s["index"]!): \(packets) packets, \(opened) frames")
            let mos = Double(s["mos"]!)!
            #expect(mos > 4 && mos <= 4.5)
        }
        // Every bot's join phases come in order.
        for r in rows {
            // In causal order (offer/answer may finish after ICE: Janus answers checks early).
            let names = ["websocket_s", "session_s", "attached_s", "joined_s", "ice_connected_s", "dtls_connected_s", "first_rtp_s"]
            let phases = names.compactMap { r[$0].flatMap(Double.init) }
            #expect(phases.count == names.count && phases == phases.sorted(), "\(r["display"]!): \(phases)")
            let negotiated = try #require(r["negotiated_s"].flatMap(Double.init), "\(r["display"]!): no offer/answer time")
            #expect(negotiated >= phases[3], "\(r["display"]!): offer/answer before joined")
        }
        // In the steady window each subscriber got each publisher's frames, ±2 %.
        let steady = try #require(summary["steady"] as? [String: Any])
        let ratio = try #require(steady["receivedOverSent"] as? [String: Any])
        #expect(ratio["n"] as? Int == 25)
        #expect((ratio["min"] as! Double) > 0.98 && (ratio["max"] as! Double) < 1.02, "received/sent: \(ratio)")

        let html = try String(contentsOf: dir.appendingPathComponent("report.html"), encoding: .utf8)
        #expect(html.contains("The room held") && html.contains("<svg"))
        for plot in ["join-time-cdf", "bitrate", "loss", "jitter", "mos", "cpu", "memory"] {
            let png = try Data(contentsOf: dir.appendingPathComponent("\(plot).png"))
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 2000, "\(plot).png")
        }
    }

    // The direct paths under a cut: publishers send with sendto on the selected pair's socket
    // and subscribers carry packets on in nicesrc's thread; both must ride out lost UDP as
    // webrtcbin's chains do (FaultTests.udpLoss: no comeback needed for 3 s). Janus of its own:
    // the cut must hit no other test.
    @Test("direct paths, Janus's UDP dropped for 4 s (iptables): every subscriber opens every publisher again within 2 s, no bot lost")
    func udpCut() async throws {
        let dir = try Scene.tempDirectory("load-udp")
        try await OwnJanus.with(port: 8197, in: dir, rtpPorts: 12500...12599) { (janus: OwnJanus) async throws -> Void in
            try await Self.udpCut(janus)
        }
    }

    static func udpCut(_ janus: OwnJanus) async throws {
            var plan = try Self.plan(room: try await Scene.createPermanentRoom(janus.url), publishers: 2, subscribers: 3,
                                     ring: KeyRing(current: .random()), seconds: 16)
            plan.janusURL = janus.url
            #expect(plan.sendPath == .direct && plan.receivePath == .direct, "the defaults are the paths under test")
            let planned = plan
            let run = Task { try await LoadRun(plan: planned).run() }
            try await Task.sleep(for: .seconds(5))
            let drop: Faults.Drop
            do { drop = try await Faults.dropUDP(ports: janus.rtpPorts, for: .seconds(4)) } catch {
                run.cancel()
                _ = try? await run.value
                throw error
            }
            let result = try await run.value
            let shard = try #require(result.shards.first)
            // Frames opened per second, from the run's once-a-second timeline (cumulative counts).
            let samples = shard.timeline.map { (at: shard.started.addingTimeInterval($0.t), opened: $0.framesOpened) }
            let perSecond = zip(samples, samples.dropFirst()).map { (at: $1.at, rate: Double($1.opened - $0.opened) / max(0.1, $1.at.timeIntervalSince($0.at))) }
            let full = Double(plan.subscribers * plan.publishers * 50)   // 20 ms Opus frames
            let during = perSecond.filter { $0.at > drop.cut.addingTimeInterval(1) && $0.at <= drop.restored }
            let back = perSecond.first { $0.at > drop.restored && $0.rate > 0.9 * full }
            let gap = back.map { $0.at.timeIntervalSince(drop.restored) }
            print(String(format: "load udp cut: %d packets dropped; opened/s during the cut %@, back at %@ after the restore; past the queue %d, through it %d",
                         drop.packets, during.map { String(format: "%.0f", $0.rate) }.joined(separator: " "), gap.map { String(format: "%.2f s", $0) } ?? "never",
                         shard.receivedPastQueue ?? -1, shard.receivedThroughQueue ?? -1))
            #expect(drop.packets > 100, "media was flowing and was cut")
            #expect(!during.isEmpty && during.allSatisfy { $0.rate < 0.1 * full }, "nothing was opened while UDP was dropped: \(during)")
            let gapText = gap.map { String(format: "%.2f s", $0) } ?? "never"
            #expect((gap ?? .infinity) <= 2, "every subscriber opened every publisher's frames again (≥ 90 % of \(full)/s) ≤ 2 s after the restore: \(gapText)")
            let states = result.bots.map { "\($0.display): \($0.state.rawValue)" }
            #expect(result.bots.count == 5 && result.bots.allSatisfy { $0.state == .joined }, "\(states)")
            // The steady tail after the cut: every feed at the full rate to the end (the last second
            // left out: the run's end cuts it, 268 of 300 once on a loaded machine).
            // Frames are what count: a second the loaded machine's scheduler cut short (263 then
            // 340 of 300) lost nothing; the tail as a whole must hold ≥ 95 % of the full rate.
            let tail = perSecond.filter { $0.at > drop.restored.addingTimeInterval(3) }.dropLast()
            let tailRate = tail.isEmpty ? 0 : tail.map(\.rate).reduce(0, +) / Double(tail.count)
            #expect(tail.count >= 3 && tailRate > 0.95 * full && tail.allSatisfy { $0.rate > 0.75 * full }, "after the cut: \(tail.map(\.rate))")
    }

    @Test("subscribers with the wrong key: the report shows every frame failing, and the room not holding")
    func wrongKey() async throws {
        let room = try await Scene.createRoom()
        let senders = Task { try await LoadRun(plan: try Self.plan(room: room, publishers: 2, subscribers: 0, ring: KeyRing(current: .random()), seconds: 9)).run() }
        defer { senders.cancel() }
        try await Task.sleep(for: .seconds(2))
        let dir = try Scene.tempDirectory("load-wrongkey")
        let result = try await LoadRun(plan: try Self.plan(room: room, publishers: 0, subscribers: 2, ring: KeyRing(current: .random()), seconds: 3)).run()
        _ = try await LoadReport.write(result, to: dir)
        let summary = try Self.summary(in: dir)
        #expect(summary["held"] as? Bool == false)
        let subs = try #require(summary["subscribers"] as? [String: Any])
        #expect(subs["framesOpened"] as? Int == 0)
        let failures = try #require(subs["decryptFailures"] as? [String: Int])
        #expect((failures["no_key_opens"] ?? 0) > 200 && failures.count == 1, "failures by reason: \(failures)")
        #expect((summary["problems"] as? [String] ?? []).contains { $0.contains("did not decrypt") })
        _ = try await senders.value
    }

    @Test("--video: publishers send the shared H.264 picture sealed; every subscriber decrypts both tracks of each")
    func video() async throws {
        var plan = try Self.plan(room: try await Scene.createRoom(), publishers: 2, subscribers: 2, ring: KeyRing(current: .random()), seconds: 4)
        plan.video = true
        let dir = try Scene.tempDirectory("load-video")
        let summary = try await LoadReport.write(try await LoadRun(plan: plan).run(), to: dir)
        #expect(summary.held, "\(summary.problems)")
        for s in try Self.rows(in: dir).filter({ $0["role"] == "subscriber" }) {
            // 2 publishers over ≥ 4 s (the shared encoder is set to 10 fps; 6-7 fps arrive, see
            // the issue note); audio and video frames all opened.
            #expect(Int(s["video_frames_opened"]!)! > 30, "subscriber \(s["index"]!): \(s["video_frames_opened"]!) video frames")
            #expect(s["decrypt_failures"] == "0" && s["feeds_receiving"] == "2")
        }
    }

    @Test("two shards in one room, merged: every subscriber of either shard received all 4 publishers")
    func shardsMerge() async throws {
        let room = try await Scene.createRoom(), ring = KeyRing(current: .random())
        let dirs = try (0..<2).map { try Scene.tempDirectory("shard\($0)") }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<2 {
                group.addTask {
                    let r = try await LoadRun(plan: try Self.plan(room: room, publishers: 4, subscribers: 2, ring: ring, seconds: 4,
                                                                  shard: .init(index: i, count: 2))).run()
                    _ = try await LoadReport.write(r, to: dirs[i])
                }
            }
            try await group.waitForAll()
        }
        let out = try Scene.tempDirectory("merged")
        let summary = try await LoadReport.write(try LoadReport.merge(dirs), to: out)
        #expect(summary.shards == 2 && summary.bots.joined == 6)
        #expect(summary.subscribers.receivingEveryFeed == 2 && summary.subscribers.feedsReceiving == 8)
        #expect(summary.subscribers.decryptFailuresTotal == 0)
        #expect(try Self.rows(in: out).map { $0["shard"]! }.sorted() == ["0", "0", "0", "1", "1", "1"])
        #expect(throws: LoadReport.MergeError.self) { try LoadReport.merge([dirs[0], dirs[0]]) }
    }
}
}
