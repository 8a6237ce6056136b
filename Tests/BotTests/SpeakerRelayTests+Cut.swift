import Foundation
import Testing
import TestSupport

extension MediaScene.SpeakerRelayTests {
    /// Faults are part of the job: all UDP of Janus's RTP range dropped for 3 s (iptables, inside
    /// the namespace) under a speaker stream. The connection stays; the consumer hears `muted`
    /// during the cut, and PCM with the tone after it; the gap in the PCM is measured.
    @Test("all UDP of Janus's RTP range dropped for 3 s under a speaker stream: one connection, muted during the cut, the tone again after; the gap printed")
    func udpCutUnderTheSpeakerStream() async throws {
        let dir = try Scene.tempDirectory("speaker-udp-cut")
        let source = try SpeakerCase.bursts(440, seconds: 24, in: dir)
        let port = try RelayServers.freePort()
        let (arrivals, out) = (dir.appendingPathComponent("arrivals.jsonl"), dir.appendingPathComponent("wavs"))
        let consumer = try await SpeakerConsumer.start(port: port, out: out, arrivals: arrivals)
        defer { Task { await consumer.stop() } }
        try await OwnJanus.with(port: 8251, in: dir, reclaimTimeout: 30, rtpPorts: 13100...13199) { janus in
            let room = try await Scene.createPermanentRoom(janus.url)
            let relay = try SfubotProcess.start(["relay", "--janus", janus.url, "--room", "\(room)", "--key-hex", RelayCase.key,
                                                 "--to", "ws://127.0.0.1:\(port)/s/{participant}", "--duration", "22"])
            try await Task.sleep(for: .seconds(2))
            let player = try SfubotProcess.start(["play", source.path, "--janus", janus.url, "--room", "\(room)", "--key-hex", RelayCase.key,
                                                  "--display", "7:Ann"])
            defer { player.signal(SIGKILL) }
            let pcm = { (try? SpeakerCase.arrivals(arrivals).filter { $0.bytes > 0 }.count) ?? 0 }
            #expect(await eventually(within: 20) { pcm() > 100 }, "PCM before the cut")
            let drop = try await Faults.dropUDP(ports: janus.rtpPorts, for: .seconds(3))
            let ran = await relay.finished()
            try await Task.sleep(for: .seconds(1))
            await consumer.stop()
            let line = ran.outText.split(whereSeparator: \.isNewline).first { $0.hasPrefix("speaker streams to") }.map(String.init) ?? ""
            #expect(drop.packets > 100, "media was flowing and was cut: \(drop.packets) packets dropped")
            #expect(ran.status == 0, "relay exited \(ran.status): \(ran.errText.suffix(1500))")
            #expect(line.contains("speakers 1, connections 1,"), "one connection through the cut: \(ran.outText)")

            let messages = try SpeakerCase.arrivals(arrivals)
            let cut = drop.cut.timeIntervalSince1970, restored = drop.restored.timeIntervalSince1970
            #expect(messages.contains { $0.text?["type"] as? String == "muted" && $0.t > cut && $0.t < restored + 1 }, "muted during the cut")
            let times = messages.filter { $0.bytes > 0 }.map(\.t)
            let before = times.last { $0 < cut } ?? cut, after = times.first { $0 > restored } ?? .infinity
            let gap = after - before
            print(String(format: "speaker stream through a 3 s UDP cut: %d packets dropped; no PCM for %.2f s, back %.2f s after UDP", drop.packets, gap, after - restored))
            #expect(after - restored <= 2, "PCM again \(after - restored) s after UDP was let through")
            let samples = try SpeakerCase.samples(out.appendingPathComponent("7.wav"))
            let tone = { (part: ArraySlice<Int16>) in Audio.power(part, at: 440, rate: 16000) > 100 * Audio.power(part, at: 660, rate: 16000) }
            #expect(samples.count >= 16000 * 8 && tone(samples.suffix(16000 * 4)), "the tone after the cut (\(Double(samples.count) / 16000) s of PCM)")
        }
    }
}
