import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import LoadTest
import Prometheus
import Telemetry
import Logging
import Testing

@Suite struct LoadReportTests {
    @Test("--shard I/N deals bots round-robin; every bot in exactly one shard")
    func shards() {
        #expect(LoadPlan.Shard("1/3") == LoadPlan.Shard(index: 1, count: 3))
        for bad in ["3/3", "-1/2", "1", "a/b", "0/0"] { #expect(LoadPlan.Shard(bad) == nil, "\(bad)") }
        let all = (0..<3).flatMap { LoadPlan.Shard(index: $0, count: 3).indices(of: 10) }
        #expect(all.sorted() == Array(0..<10))
    }

    @Test("--subscribe-limit: each subscriber takes k feeds from its own offset; all publishers get listeners")
    func selection() {
        let pubs = Array(Int64(100)..<110)
        #expect(feedSelection(publishers: pubs, have: [], index: 3, limit: nil) == pubs)
        let picks = (0..<5).map { feedSelection(publishers: pubs, have: [], index: $0, limit: 2) }
        #expect(picks.allSatisfy { $0.count == 2 })
        #expect(Set(picks.flatMap { $0 }) == Set(pubs))
        // Feeds a subscriber has count toward its limit; new ones fill up to it.
        #expect(feedSelection(publishers: pubs, have: [100, 101], index: 0, limit: 2).isEmpty)
        #expect(feedSelection(publishers: pubs, have: [100], index: 0, limit: 3) == [101, 102])
    }

    static func result(_ bots: [BotRecord], shards: Int = 1) -> LoadResult {
        let shard = LoadResult.Shard(index: 0, count: shards, host: "h", started: Date(timeIntervalSince1970: 0), ended: Date(timeIntervalSince1970: 20),
                                     steadyStart: Date(timeIntervalSince1970: 5), steadyEnd: Date(timeIntervalSince1970: 15), interrupted: false,
                                     timeline: [], steadyCPUSeconds: 2, steadyKernelCPUSeconds: 0.8, peakRSSBytes: 110 << 20, peakThreads: 50, baselineThreads: 10,
                                     baselineRSSBytes: 100 << 20, steadyPacketsSent: 1000, steadyPacketsReceived: 3000, fanOutGroups: 2)
        return LoadResult(room: 1, janus: "ws://x", e2ee: true, video: false, media: nil, publishers: 1, subscribers: bots.count - 1,
                          subscribeLimit: nil, shards: [shard], bots: bots)
    }

    static func publisher(sent: Int) -> BotRecord {
        var p = BotRecord(role: .publisher, index: 0, shard: 0, display: "p", state: .joined)
        p.feedID = 77
        p.steadyFramesSent = sent
        return p
    }

    static func subscriber(_ i: Int, got: Int, failures: [String: Int] = [:]) -> BotRecord {
        var s = BotRecord(role: .subscriber, index: i, shard: 0, display: "s, \"quoted\"", state: .joined)
        s.feeds = 1
        s.feedsReceiving = got > 0 ? 1 : 0
        s.steadyFramesByFeed = ["77": got]
        s.decryptFailures = failures
        s.packetsReceived = 1000
        s.packetsLost = 5
        s.mos = 4.3
        return s
    }

    @Test("a healthy room holds; per-process cost is CPU over packets, RSS and threads over bots")
    func holds() {
        let s = LoadSummary(Self.result([Self.publisher(sent: 500), Self.subscriber(0, got: 500), Self.subscriber(1, got: 495)]))
        #expect(s.held && s.problems.isEmpty)
        #expect(s.steady?.receivedOverSent?.min == 0.99)
        let p = s.process[0]
        #expect(p.cpuMicrosecondsPerPacket == 500 && p.kernelMicrosecondsPerPacket == 200)  // 2 s (0.8 s kernel) over 4000 packets
        #expect(p.cpuCores == 0.2 && p.threadsPerBot == 40.0 / 3)
        #expect(abs((p.rssPerBotMB ?? 0) - 10.0 / 3) < 1e-9)
        #expect(abs((s.subscribers.lossPercent ?? 0) - 100 * 10 / 2010.0) < 1e-9)
    }

    @Test("decrypt failures, a starved subscriber, failed bots and interruption each make the room not hold")
    func problems() {
        var failed = Self.subscriber(2, got: 0, failures: ["no_key_opens": 300])
        failed.state = .joined
        var never = BotRecord(role: .subscriber, index: 3, shard: 0, display: "x", state: .failed)
        never.attempts = 4
        var r = Self.result([Self.publisher(sent: 500), Self.subscriber(0, got: 500), failed, never])
        r.shards[0].interrupted = true
        let s = LoadSummary(r)
        #expect(!s.held)
        #expect(s.bots.retries == 3 && s.bots.failed == 1)
        #expect(s.subscribers.decryptFailures == ["no_key_opens": 300])
        for phrase in ["did not decrypt", "did not receive every publisher", "never joined", "interrupted", "only 0 %"] {
            #expect(s.problems.contains { $0.contains(phrase) }, "\(phrase) in \(s.problems)")
        }
    }

    @Test("bots.csv quotes what needs it and has one row per bot")
    func csv() {
        var s = Self.subscriber(0, got: 1)
        s.error = "Janus hung up: \"ICE failed\", twice"
        let text = LoadReport.csv([Self.publisher(sent: 1), s])
        let lines = text.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines[0].split(separator: ",").count == LoadReport.columns.count)
        #expect(lines[2].contains("\"s, \"\"quoted\"\"\"") && lines[2].contains("\"Janus hung up: \"\"ICE failed\"\", twice\""))
    }

    @Test("the relayed share and the RTT a relay added: per selected pair, from publishers with RTCP; in the CSV and the line")
    func relayShare() throws {
        func bot(_ i: Int, _ pair: String?, rtt: Double? = nil, throughAgent: UInt64? = nil) -> BotRecord {
            var b = Self.publisher(sent: 500)
            b.index = i
            b.candidatePair = pair
            b.rttMs = rtt
            b.packetsSent = 1000
            b.packetsThroughAgent = throughAgent
            return b
        }
        let bots = [bot(0, "relay/udp→host", rtt: 3), bot(1, "relay/udp→host", rtt: 5), bot(2, "host→host", rtt: 1),
                    bot(3, "relay/udp→host", throughAgent: 1000), bot(4, "host→host", throughAgent: 0), bot(5, nil)]
        let ice = try #require(LoadSummary(Self.result(bots)).ice)
        #expect(ice.bots == 5 && ice.relayed == 3 && ice.direct == 2 && ice.relayedShare == 0.6)
        #expect(ice.pairs == ["relay/udp→host": 3, "host→host": 2])
        // Relayed 3 and 5 ms (median 5 by the nearest-rank rounding), direct 1 ms.
        #expect(ice.rttRelayedMs?.n == 2 && ice.rttDirectMs?.n == 1 && ice.addedRTTMs == .init(p50: 4, p95: 4))
        #expect(ice.directPacketsSent == 2000 && ice.directPacketsThroughAgent == 1000)
        #expect(ice.line.contains("3 of 5 bots relayed (60 %") && ice.line.contains("the relay added p50 +4.0 ms"), "\(ice.line)")
        let csv = LoadReport.csv(bots).split(separator: "\n")
        let header = csv[0].split(separator: ",").map(String.init), row = csv[4].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        #expect(row[header.firstIndex(of: "candidate_pair")!] == "relay/udp→host" && row[header.firstIndex(of: "packets_through_agent")!] == "1000")
        // No pair read (an older raw.json): no `ice` at all, rather than 0 of 0.
        #expect(LoadSummary(Self.result([Self.publisher(sent: 1)])).ice == nil)
        // Direct send path only: no RTT, and the line says why.
        #expect(ICEPaths([bot(0, "relay/udp→host", throughAgent: 1000)])!.line.contains("--send-path webrtcbin measures it"))
    }

    @Test("raw.json round-trips, so merge sees what the shard measured")
    func roundTrip() throws {
        let r = Self.result([Self.publisher(sent: 500), Self.subscriber(0, got: 500)])
        let back = try LoadReport.decoder.decode(LoadResult.self, from: LoadReport.encoder.encode(r))
        #expect(back.bots == r.bots && back.shards[0].peakRSSBytes == r.shards[0].peakRSSBytes && back.shards[0].steadyStart == r.shards[0].steadyStart
               && back.shards[0].steadyKernelCPUSeconds == 0.8)
    }

    @Test("load's metrics are Prometheus exposition format with the shard label; counters follow the totals")
    func metricsText() {
        let registry = PrometheusCollectorRegistry()
        let m = LoadMetrics(shard: 2, factory: PrometheusMetricsFactory(registry: registry))
        var figures = LiveFigures(sample: TimelineSample(t: 3, publishersJoined: 4, subscribersJoined: 5, failed: 1, mbpsOut: 0.5, mbpsIn: 2,
                                                         lossPercent: 0.25, decryptFailures: 7, framesOpened: 900, cpuCores: 0.4, rssMB: 100, threads: 40),
                                  planned: 10, retries: 2, phase: "steady", packetsSent: 123, packetsReceived: 456)
        m.update(figures)
        var text = Telemetry.render(registry)
        for line in ["sfubot_load_bots{shard=\"2\",role=\"subscriber\",state=\"joined\"} 5.0",
                     "sfubot_load_decrypt_failures_total{shard=\"2\"} 7",
                     "# TYPE sfubot_load_rtp_packets_total counter",
                     "sfubot_load_rtp_packets_total{shard=\"2\",direction=\"in\"} 456",
                     "sfubot_load_resident_bytes{shard=\"2\"} 104857600.0"] {
            #expect(text.contains(line + "\n"), "\(line)")
        }
        // Every sample line is `name{labels} number`.
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            #expect(line.split(separator: " ").count == 2 && Double(line.split(separator: " ")[1]) != nil, "\(line)")
        }
        // A second second: counters grow by what the totals grew, gauges take the new value.
        figures.sample.decryptFailures = 9
        figures.sample.subscribersJoined = 3
        figures.comebacks.rejoins = 2
        figures.faults = ["ws-drop": 4]
        m.update(figures)
        text = Telemetry.render(registry)
        for line in ["sfubot_load_decrypt_failures_total{shard=\"2\"} 9",
                     "sfubot_load_bots{shard=\"2\",role=\"subscriber\",state=\"joined\"} 3.0",
                     "sfubot_load_rejoins_total{shard=\"2\"} 2",
                     "sfubot_load_chaos_faults_total{shard=\"2\",kind=\"ws-drop\"} 4"] {
            #expect(text.contains(line + "\n"), "\(line): \(text)")
        }
    }

    @Test("--metrics-port serves the text on GET /metrics over HTTP on 127.0.0.1")
    func metricsOverHTTP() async throws {
        let registry = PrometheusCollectorRegistry()
        let m = LoadMetrics(shard: 0, factory: PrometheusMetricsFactory(registry: registry))
        m.update(LiveFigures(sample: TimelineSample(t: 1, publishersJoined: 3, subscribersJoined: 0, failed: 0, mbpsOut: 0, mbpsIn: 0,
                                                    lossPercent: nil, decryptFailures: 0, framesOpened: 0, cpuCores: 0, rssMB: 1, threads: 1),
                             planned: 3, retries: 0, phase: "steady", packetsSent: 0, packetsReceived: 0))
        let server = MetricsServer(registry: registry)
        let port = Int.random(in: 20_000...29_999)
        try await server.start(host: "127.0.0.1", port: port, logger: .init(label: "test"))
        defer { server.stop() }
        var body = ""
        var contentType: String?
        for _ in 0..<50 where body.isEmpty {
            try await Task.sleep(for: .milliseconds(100))
            if let (data, response) = try? await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/metrics")!),
               let http = response as? HTTPURLResponse, http.statusCode == 200 {
                body = String(decoding: data, as: UTF8.self)
                contentType = http.value(forHTTPHeaderField: "Content-Type")
            }
        }
        #expect(body.contains("sfubot_load_bots{shard=\"0\",role=\"publisher\",state=\"joined\"} 3.0"), "\(body)")
        #expect(contentType?.hasPrefix("text/plain; version=0.0.4") == true, "\(contentType ?? "none")")
        // A second server on the same port cannot listen, and says which port.
        let second = MetricsServer(registry: registry)
        await #expect(throws: MetricsServerError.self) { try await second.start(host: "127.0.0.1", port: port, logger: .init(label: "test")) }
        do { try await second.start(host: "127.0.0.1", port: port, logger: .init(label: "test")) } catch {
            #expect(error.port == port && error.description.contains("127.0.0.1:\(port)"))
        }
    }

    @Test("a plot with no data says so instead of drawing empty axes")
    func emptyPlot() {
        let svg = SVGPlot(name: "x", title: "T", xLabel: "a", yLabel: "b").svg
        #expect(svg.contains("no data") && svg.hasSuffix("</svg>"))
    }
}
