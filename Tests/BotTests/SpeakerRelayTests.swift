import Foundation
import GStreamerKit
import Testing
import TestSupport

extension MediaScene {
    /// `sfubot relay --to ws://…/{participant}`: two publishers (`sfubot play`, 440 Hz and 660 Hz
    /// tone bursts) into a room; the relay streams each one's audio to the docs' own consumer
    /// (scripts/examples/speaker-wavs.py, a real `websockets` server) which writes one WAV per
    /// speaker. A second relay with the wrong key streams to a second consumer at the same time.
    @Suite(.enabled(if: SpeakerConsumer.missing == nil, "\(SpeakerConsumer.missing ?? "")")) struct SpeakerRelayTests {
        @Test("each speaker's own tone on their own connection: start first, speaking, left last; the delay from the publisher's send printed; a wrong key sends no PCM")
        func eachSpeakerOnTheirOwnConnection() async throws {
            let dir = try Scene.tempDirectory("speaker-streams")
            let ann = try SpeakerCase.bursts(440, in: dir), bob = try SpeakerCase.bursts(660, in: dir)
            let (port, wrongPort, opusPort) = (try RelayServers.freePort(), try RelayServers.freePort(), try RelayServers.freePort())
            let (out, wrongOut, opusOut) = (dir.appendingPathComponent("wavs"), dir.appendingPathComponent("wavs-wrong-key"), dir.appendingPathComponent("opus"))
            let (arrivals, wrongArrivals) = (dir.appendingPathComponent("arrivals.jsonl"), dir.appendingPathComponent("arrivals-wrong-key.jsonl"))
            let opusArrivals = dir.appendingPathComponent("arrivals-opus.jsonl")
            let consumer = try await SpeakerConsumer.start(port: port, out: out, arrivals: arrivals)
            let wrongConsumer = try await SpeakerConsumer.start(port: wrongPort, out: wrongOut, arrivals: wrongArrivals)
            let opusConsumer = try await SpeakerConsumer.start(port: opusPort, out: opusOut, arrivals: opusArrivals)
            defer { Task { await consumer.stop(); await wrongConsumer.stop(); await opusConsumer.stop() } }
            let room = try await Scene.createRoom()
            let relay = try SpeakerCase.relay(port: port, room: room, key: RelayCase.key)
            let wrong = try SpeakerCase.relay(port: wrongPort, room: room, key: RelayCase.otherKey)
            // Only Bob, as his Opus packets.
            let opus = try SpeakerCase.relay(port: opusPort, room: room, key: RelayCase.key, ["--participant", "8", "--ws-audio", "opus"])
            try await Task.sleep(for: .seconds(2))
            let players = [try SpeakerCase.play(ann, as: "7:Ann", room: room), try SpeakerCase.play(bob, as: "8:Bob", room: room)]
            var played: [ChildProcess.Finished] = []
            for p in players { played.append(await p.finished()) }
            let (ran, ranWrong, ranOpus) = (await relay.finished(), await wrong.finished(), await opus.finished())
            // Stopped here, not only in the defer's task: a test process that exits first would leave them running.
            // The consumer has the relay's close (its files flushed) a moment after the relay ends.
            try await Task.sleep(for: .seconds(1))
            for c in [consumer, wrongConsumer, opusConsumer] { await c.stop() }
            #expect(played.allSatisfy { $0.status == 0 }, "\(played.map { $0.errText.suffix(800) })")
            #expect(ran.status == 0, "relay exited \(ran.status): \(ran.outText) \(ran.errText.suffix(1500))")

            let messages = try SpeakerCase.arrivals(arrivals)
            for (id, display, tone, other) in [("7", "Ann", 440.0, 660.0), ("8", "Bob", 660.0, 440.0)] {
                let mine = messages.filter { $0.participant == id }
                let start = try #require(mine.first?.text, "participant \(id)'s first message")
                #expect(start["type"] as? String == "start" && start["display"] as? String == display && start["sample_rate"] as? Int == 16000)
                #expect(mine.last?.text?["type"] as? String == "left", "the last message says they left")
                #expect(mine.contains { $0.text?["type"] as? String == "speaking" && $0.text?["speaking"] as? Bool == true })
                let samples = try SpeakerCase.samples(out.appendingPathComponent("\(id).wav"))
                #expect(samples.count >= 16000 * 9, "\(id): \(Double(samples.count) / 16000) s of PCM")
                let slice = samples[...]
                let (p, q) = (Audio.power(slice, at: tone, rate: 16000), Audio.power(slice, at: other, rate: 16000))
                #expect(p > 100 * q, "\(id)'s stream holds \(tone) Hz, not the other speaker's \(other) Hz: \(p) vs \(q)")
            }
            let onsets = try SpeakerCase.latencies(messages, participant: "7", wav: out.appendingPathComponent("7.wav"), log: played[0].errText)
            #expect(onsets.count >= 8, "tone onsets found: \(onsets)")
            let sorted = onsets.sorted()
            if !sorted.isEmpty {
                let at = { (q: Double) in sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))] * 1000 }
                print(String(format: "speaker stream delay, publisher's send → consumer (%d onsets): p50 %.0f ms, p95 %.0f ms, max %.0f ms",
                             sorted.count, at(0.5), at(0.95), sorted.last! * 1000))
            }
            let counters = ran.outText.split(whereSeparator: \.isNewline).first { $0.hasPrefix("speaker streams to") }.map(String.init) ?? ""
            print("relay: \(counters)")
            #expect(counters.contains("speakers 2,") && counters.contains("dropped for a slow consumer: 0"), "\(ran.outText)")

            // The wrong key: connections, never a byte of PCM; every frame a counted drop.
            let wrongMessages = try SpeakerCase.arrivals(wrongArrivals)
            #expect(!wrongMessages.contains { $0.bytes > 0 }, "PCM that left the wrong-key relay: \(wrongMessages.filter { $0.bytes > 0 }.count) messages")
            #expect(ranWrong.outText.contains("PCM messages 0 "), "\(ranWrong.outText)")
            #expect(RelayCase.counters(ranWrong.outText).dropped > 400, "\(ranWrong.outText)")

            // --ws-audio opus --participant 8: one connection, Bob's packets as sent, decoding to 660 Hz.
            #expect(ranOpus.status == 0, "opus relay exited \(ranOpus.status): \(ranOpus.outText) \(ranOpus.errText.suffix(1500))")
            let opusMessages = try SpeakerCase.arrivals(opusArrivals)
            #expect(Set(opusMessages.map(\.participant)) == ["8"], "\(Set(opusMessages.map(\.participant)))")
            #expect(opusMessages.first?.text?["format"] as? String == "opus" && opusMessages.first?.text?["sample_rate"] as? Int == 48000)
            let decoded = try await SpeakerCase.decodeOpus(opusOut.appendingPathComponent("8.opus-packets"))
            #expect(decoded.count >= 16000 * 9, "\(Double(decoded.count) / 16000) s decoded from the Opus packets")
            #expect(Audio.power(decoded[...], at: 660, rate: 16000) > 100 * Audio.power(decoded[...], at: 440, rate: 16000))
        }

        @Test("--ws-listen: the consumer connects to the relay (the index, then each speaker it lists): each speaker's own tone, start first, left last")
        func listeningRelay() async throws {
            let dir = try Scene.tempDirectory("speaker-listen")
            let ann = try SpeakerCase.bursts(440, in: dir), bob = try SpeakerCase.bursts(660, in: dir)
            let port = try RelayServers.freePort()
            let (out, arrivals) = (dir.appendingPathComponent("wavs"), dir.appendingPathComponent("arrivals.jsonl"))
            let room = try await Scene.createRoom()
            let relay = try SfubotProcess.start(["relay", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", RelayCase.key, "--duration", "20",
                                                 "--ws-listen", "--to", "ws://127.0.0.1:\(port)/speakers/{participant}"])
            let consumer = try SpeakerConsumer.connect(index: "ws://127.0.0.1:\(port)/speakers", out: out, arrivals: arrivals)
            defer { consumer.signal(SIGKILL) }
            try await Task.sleep(for: .seconds(2))
            let players = [try SpeakerCase.play(ann, as: "7:Ann", room: room), try SpeakerCase.play(bob, as: "8:Bob", room: room)]
            for p in players { _ = await p.finished() }
            let ran = await relay.finished()
            let consumed = await consumer.finished()
            let line = ran.outText.split(whereSeparator: \.isNewline).first { $0.hasPrefix("speaker streams to") }.map(String.init) ?? ""
            print("relay: \(line)")
            #expect(ran.status == 0, "relay exited \(ran.status): \(ran.errText.suffix(1500))")
            #expect(consumed.outText.contains("connected to ws://127.0.0.1:\(port)/speakers"), "\(consumed.outText) \(consumed.errText.suffix(1500))")
            #expect(ran.errText.contains("listening for speaker-stream consumers on ws://127.0.0.1:\(port)/speakers"), "\(ran.errText.suffix(1500))")
            let messages = try SpeakerCase.arrivals(arrivals)
            for (id, tone, other) in [("7", 440.0, 660.0), ("8", 660.0, 440.0)] {
                let mine = messages.filter { $0.participant == id && $0.text != nil }
                #expect(mine.first?.text?["type"] as? String == "start" && mine.last?.text?["type"] as? String == "left", "\(id): \(mine.map { $0.text?["type"] ?? "" })")
                let samples = try SpeakerCase.samples(out.appendingPathComponent("\(id).wav"))
                #expect(samples.count >= 16000 * 9, "\(id): \(Double(samples.count) / 16000) s of PCM")
                #expect(Audio.power(samples[...], at: tone, rate: 16000) > 100 * Audio.power(samples[...], at: other, rate: 16000))
            }
        }

        @Test("Janus SIGKILLed and restarted under the relay: it rejoins, Ann (back on a new feed) goes on in the same connection, no left")
        func janusRestartedUnderTheSpeakerStreams() async throws {
            let dir = try Scene.tempDirectory("speaker-janus-restart")
            let source = try SpeakerCase.bursts(440, seconds: 26, in: dir)
            let port = try RelayServers.freePort()
            let (arrivals, out) = (dir.appendingPathComponent("arrivals.jsonl"), dir.appendingPathComponent("wavs"))
            let consumer = try await SpeakerConsumer.start(port: port, out: out, arrivals: arrivals)
            defer { Task { await consumer.stop() } }
            try await OwnJanus.with(port: 8250, in: dir, reclaimTimeout: 30, rtpPorts: 13000...13099) { janus in
                let room = try await Scene.createPermanentRoom(janus.url)
                let relay = try SfubotProcess.start(["relay", "--janus", janus.url, "--room", "\(room)", "--key-hex", RelayCase.key,
                                                     "--to", "ws://127.0.0.1:\(port)/s/{participant}", "--duration", "24"])
                try await Task.sleep(for: .seconds(2))
                let player = try SfubotProcess.start(["play", source.path, "--janus", janus.url, "--room", "\(room)", "--key-hex", RelayCase.key,
                                                      "--display", "7:Ann"])
                defer { player.signal(SIGKILL) }
                try await Task.sleep(for: .seconds(7))
                try await janus.kill9()
                try await Task.sleep(for: .seconds(1))
                try await janus.restart()
                let ran = await relay.finished()
                // The consumer has the relay's close (its files flushed) a moment after the relay ends.
                try await Task.sleep(for: .seconds(1))
                await consumer.stop()
                let line = ran.outText.split(whereSeparator: \.isNewline).first { $0.hasPrefix("speaker streams to") }.map(String.init) ?? ""
                print("relay: \(line)")
                #expect(ran.status == 0, "relay exited \(ran.status): \(ran.errText.suffix(1500))")
                #expect(ran.errText.contains("lost Janus") && ran.errText.contains("back in room"), "\(ran.errText.suffix(2000))")
                #expect(line.contains("speakers 1, connections 1,") && !line.contains("rejoins: 0"), "one connection through the outage: \(ran.outText)")
                let messages = try SpeakerCase.arrivals(arrivals)
                #expect(!messages.contains { $0.text?["type"] as? String == "left" }, "Ann never left")
                #expect(messages.filter { $0.text?["type"] as? String == "start" }.count == 1)
                // The tone before the kill (the first 5 s of PCM) and after the comeback (the last 5 s).
                let samples = try SpeakerCase.samples(out.appendingPathComponent("7.wav"))
                let tone = { (part: ArraySlice<Int16>) in Audio.power(part, at: 440, rate: 16000) > 100 * Audio.power(part, at: 660, rate: 16000) }
                #expect(samples.count >= 16000 * 12, "\(Double(samples.count) / 16000) s of PCM")
                if samples.count >= 16000 * 12 {
                    #expect(tone(samples.prefix(16000 * 5)) && tone(samples.suffix(16000 * 5)), "the tone before and after")
                }
            }
        }

        @Test("the consumer killed and back: the relay connects again, a new start and the tone go on; SIGTERM closes without left, exit 74 for what the consumer missed")
        func consumerGoneAndBackThenSIGTERM() async throws {
            let dir = try Scene.tempDirectory("speaker-consumer-gone")
            let source = try SpeakerCase.bursts(440, seconds: 40, in: dir)
            let port = try RelayServers.freePort()
            let (first, second) = (dir.appendingPathComponent("first.jsonl"), dir.appendingPathComponent("second.jsonl"))
            let out = dir.appendingPathComponent("wavs")
            let killed = try await SpeakerConsumer.start(port: port, out: out, arrivals: first)
            let room = try await Scene.createRoom()
            let relay = try SfubotProcess.start(["relay", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", RelayCase.key,
                                                 "--to", "ws://127.0.0.1:\(port)/s/{participant}"])
            try await Task.sleep(for: .seconds(2))
            let player = try SpeakerCase.play(source, as: "7:Ann", room: room)
            try await Task.sleep(for: .seconds(6))
            await killed.stop()
            try await Task.sleep(for: .seconds(3))
            let consumer = try await SpeakerConsumer.start(port: port, out: out, arrivals: second)
            defer { Task { await consumer.stop() } }
            // The relay's next try (backoff up to 5 s) finds it; then 5 s of the tone.
            let back = await eventually(within: 20) { ((try? SpeakerCase.arrivals(second)) ?? []).contains { $0.bytes > 0 } }
            #expect(back, "the relay connected to the consumer again")
            try await Task.sleep(for: .seconds(5))
            relay.signal(SIGTERM)
            let ran = await relay.finished()
            // The consumer has the relay's close (its files flushed) a moment after the relay ends.
            try await Task.sleep(for: .seconds(1))
            player.signal(SIGKILL)
            await consumer.stop()
            #expect(ran.status == 74, "relay exited \(ran.status): \(ran.outText) \(ran.errText.suffix(1500))")
            #expect(ran.errText.contains("closed by the consumer; connecting again"), "\(ran.errText.suffix(1500))")
            let line = ran.outText.split(whereSeparator: \.isNewline).first { $0.hasPrefix("speaker streams to") }.map(String.init) ?? ""
            print("relay: \(line)")
            #expect(line.contains("speakers 1,") && !line.contains("not sent while a connection was down: 0;"), "\(ran.outText)")
            #expect(try SpeakerCase.arrivals(first).contains { $0.bytes > 0 }, "the first consumer got PCM before it was killed")

            let again = try SpeakerCase.arrivals(second)
            let start = try #require(again.first?.text, "the second consumer's first message")
            #expect(start["type"] as? String == "start" && (start["media_time"] as? Double ?? 0) > 8, "\(start)")
            #expect(!again.contains { $0.text?["type"] as? String == "left" }, "Ann never left: the relay's end is a close, not left")
            let samples = try SpeakerCase.samples(out.appendingPathComponent("7.wav"))
            #expect(samples.count >= 16000 * 4, "\(Double(samples.count) / 16000) s of PCM after the comeback")
            #expect(Audio.power(samples[...], at: 440, rate: 16000) > 100 * Audio.power(samples[...], at: 660, rate: 16000))
        }
    }
}

/// What the speaker-stream test shares: its sources, processes, and reading the consumer's log.
enum SpeakerCase {
    /// `seconds` of silence with a 300 ms tone at each whole second from 1 s to the last but one
    /// (a WAV `play` encodes).
    static func bursts(_ frequency: Double, seconds: Int = 12, in dir: URL) throws -> URL {
        let samples = (0..<(seconds * 48000)).map { i -> Int16 in
            let t = Double(i) / 48000
            return t >= 1 && t < Double(seconds) - 0.5 && t.truncatingRemainder(dividingBy: 1) < 0.3 ? Int16(12000 * sin(2 * .pi * frequency * t)) : 0
        }
        let file = dir.appendingPathComponent("bursts-\(Int(frequency)).wav")
        try FaultGapTests.wavData(samples).write(to: file)
        return file
    }

    static func play(_ file: URL, as display: String, room: Int64) throws -> ChildProcess {
        try SfubotProcess.start(["play", file.path, "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", RelayCase.key, "--display", display])
    }

    static func relay(port: Int, room: Int64, key: String, _ more: [String] = []) throws -> ChildProcess {
        try SfubotProcess.start(["relay", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key, "--duration", "22",
                                 "--to", "ws://127.0.0.1:\(port)/speakers/{participant}?token=s3cret"] + more)
    }

    /// The consumer's Opus packets (each after its 2-byte big-endian length) decoded by
    /// GStreamer's opusdec to 16 kHz mono, 20 ms apart.
    static func decodeOpus(_ file: URL) async throws -> [Int16] {
        let bytes = [UInt8](try Data(contentsOf: file))
        var packets: [[UInt8]] = [], at = 0
        while at + 2 <= bytes.count {
            let n = Int(bytes[at]) << 8 | Int(bytes[at + 1])
            guard at + 2 + n <= bytes.count else { break }
            packets.append(Array(bytes[(at + 2)..<(at + 2 + n)]))
            at += 2 + n
        }
        let raw = file.deletingPathExtension().appendingPathExtension("pcm")
        let pipeline = try Pipeline(description: """
            appsrc name=src format=time caps=audio/x-opus,channel-mapping-family=0,channels=2,rate=48000
              ! opusdec ! audioconvert ! audioresample ! audio/x-raw,format=S16LE,channels=1,rate=16000 ! filesink location="\(raw.path)"
            """)
        let source = try AppSource(named: "src", in: pipeline)
        for (i, p) in packets.enumerated() { _ = p.withUnsafeBytes { source.push($0, pts: UInt64(i) * 20_000_000) } }
        source.endOfStream()
        try await pipeline.runToEnd()
        return try Data(contentsOf: raw).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    struct Arrival {
        var t: Double
        var participant: String
        var offset = 0
        var bytes = 0
        var text: [String: Any]?
    }

    static func arrivals(_ file: URL) throws -> [Arrival] {
        guard let data = try? String(contentsOf: file, encoding: .utf8) else { return [] }
        return data.split(whereSeparator: \.isNewline).compactMap { line in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return Arrival(t: o["t"] as? Double ?? 0, participant: o["participant"] as? String ?? "", offset: o["offset"] as? Int ?? 0,
                           bytes: o["bytes"] as? Int ?? 0, text: o["text"] as? [String: Any])
        }
    }

    static func samples(_ wav: URL) throws -> [Int16] {
        let data = try Data(contentsOf: wav)
        guard data.count > 44 else { return [] }
        return data.dropFirst(44).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// The delay of each tone onset: when the consumer got the message holding it, less when the
    /// publisher sent it (its file's second k, counted from the player's "playing" log line).
    static func latencies(_ messages: [Arrival], participant: String, wav: URL, log: String) throws -> [Double] {
        guard let line = log.split(whereSeparator: \.isNewline).first(where: { $0.contains("media path up, playing") }),
              let t0 = try? Date(String(line.prefix(23)), strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true))
        else { return [] }
        let pcm = messages.filter { $0.participant == participant && $0.bytes > 0 }
        let samples = try samples(wav)
        var onsets: [Double] = [], quiet = 0
        for w in stride(from: 0, to: samples.count - 160, by: 160) {
            let rms = (samples[w..<(w + 160)].reduce(0.0) { $0 + Double($1) * Double($1) } / 160).squareRoot()
            if rms > 3000, quiet >= 30, let m = pcm.first(where: { $0.offset <= w * 2 && w * 2 < $0.offset + $0.bytes }) {
                let sinceStart = m.t - t0.timeIntervalSince1970
                onsets.append(sinceStart - sinceStart.rounded(.down))
            }
            quiet = rms > 3000 ? 0 : quiet + 1
        }
        return onsets
    }
}
