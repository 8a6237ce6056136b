import Bot
import FrameCrypto
import Foundation
import Testing
import TestSupport

extension MediaScene {
    /// `sfubot relay --to-room` (issue 43 item 5): Ann publishes H.264 and 440 Hz tone bursts into
    /// an ECall room A; the bridge opens them with A's key and publishes them into room B sealed
    /// with B's key in libwebrtc's FrameCryptor format. B's recorder (FrameCryptor, B's key) gets
    /// the publisher's own SPS/PPS (never re-encoded) and the tone; a recorder with A's key opens
    /// nothing in B. Speaker streams in both rooms time the tone onsets: the bridge's added delay.
    @Suite(.enabled(if: SpeakerConsumer.missing == nil, "\(SpeakerConsumer.missing ?? "")")) struct BridgeTests {
        static let keyB = String(repeating: "3c", count: 32)

        @Test("ECall room → FrameCryptor room: the H.264 as sent and the tone, sealed with B's key only; the delay it adds printed")
        func ecallRoomIntoFrameCryptorRoom() async throws {
            let dir = try Scene.tempDirectory("bridge")
            let source = try await BridgeCase.source(in: dir, seconds: 20)
            let (roomA, roomB) = (try await Scene.createRoom(), try await Scene.createRoom())
            let (portA, portB) = (try RelayServers.freePort(), try RelayServers.freePort())
            let (arrivalsA, arrivalsB) = (dir.appendingPathComponent("a.jsonl"), dir.appendingPathComponent("b.jsonl"))
            let (wavsA, wavsB) = (dir.appendingPathComponent("wavs-a"), dir.appendingPathComponent("wavs-b"))
            let consumerA = try await SpeakerConsumer.start(port: portA, out: wavsA, arrivals: arrivalsA)
            let consumerB = try await SpeakerConsumer.start(port: portB, out: wavsB, arrivals: arrivalsB)
            defer { Task { await consumerA.stop(); await consumerB.stop() } }
            let fc = ["--frame-format", "framecryptor", "--ratchet-salt", "PQSRTCFrameEncryptionSalt"]
            func sfubot(_ args: [String]) throws -> ChildProcess { try SfubotProcess.start(args + ["--janus", Scene.janusURL!, "--duration", "26"]) }
            let speakersA = try sfubot(["relay", "--room", "\(roomA)", "--key-hex", RelayCase.key, "--to", "ws://127.0.0.1:\(portA)/a/{participant}"])
            let speakersB = try sfubot(["relay", "--room", "\(roomB)", "--key-hex", Self.keyB, "--to", "ws://127.0.0.1:\(portB)/b/{participant}"] + fc)
            let (good, wrong) = (dir.appendingPathComponent("recorded-b"), dir.appendingPathComponent("recorded-b-with-a-key"))
            let recorder = try sfubot(["record", "--room", "\(roomB)", "--key-hex", Self.keyB, "--out", good.path] + fc)
            let wrongRecorder = try sfubot(["record", "--room", "\(roomB)", "--key-hex", RelayCase.key, "--out", wrong.path] + fc)
            let bridge = try sfubot(["relay", "--room", "\(roomA)", "--key-hex", RelayCase.key, "--participant", "7", "--to-room", "\(roomB)",
                                     "--to-key-hex", Self.keyB, "--to-frame-format", "framecryptor", "--to-ratchet-salt", "PQSRTCFrameEncryptionSalt",
                                     "--display", "9:Ann (bridged)"])
            try await Task.sleep(for: .seconds(2))
            let publisher = try SfubotProcess.start(["play", source.path, "--janus", Scene.janusURL!, "--room", "\(roomA)", "--key-hex", RelayCase.key,
                                                     "--display", "7:Ann"])
            let played = await publisher.finished()
            var ran: [String: ChildProcess.Finished] = [:]
            for (name, p) in [("bridge", bridge), ("speakers A", speakersA), ("speakers B", speakersB), ("recorder", recorder), ("wrong", wrongRecorder)] {
                ran[name] = await p.finished()
            }
            // The consumer has the relay's close (its files flushed) a moment after the relay ends.
            try await Task.sleep(for: .seconds(1))
            await consumerA.stop()
            await consumerB.stop()
            let b = try #require(ran["bridge"])
            print(b.outText)
            #expect(played.status == 0 && b.status == 0, "bridge exited \(b.status): \(b.errText.suffix(2000))")
            #expect(b.outText.contains("bridged participant 7 of room \(roomA) into room \(roomB)"), "\(b.outText)")
            #expect(RelayCase.counters(b.outText).dropped == 0, "\(b.outText)")

            // Room B's recording: one participant, the bridge; its H.264 the publisher's own, the tone.
            let manifest = try RecordingManifest.read(from: good)
            let audio = try #require(manifest.feeds.first { $0.kind == "audio" }), video = try #require(manifest.feeds.first { $0.kind == "video" })
            #expect(manifest.participants.count == 1 && audio.display == "9:Ann (bridged)", "\(manifest.feeds.map(\.display))")
            #expect(audio.frames.opened > 500 && video.frames.opened > 150 && audio.frames.droppedTotal == 0 && video.frames.droppedTotal == 0,
                    "\(manifest.feeds.map(\.frames))")
            let sent = try await RelayCase.parameterSets(source), recorded = try await RelayCase.parameterSets(good.appendingPathComponent(video.file))
            #expect(!recorded.sps.isEmpty && recorded.sps == sent.sps && recorded.pps == sent.pps, "not re-encoded: the publisher's SPS/PPS")
            let samples = try await RelayCase.audioSamples(good.appendingPathComponent(audio.file))
            #expect(Audio.power(samples[...], at: 440) > 100 * Audio.power(samples[...], at: 660), "the tone in room B")

            // Sealed with B's key, not A's: a recorder in B with A's key opens nothing.
            let w = try #require(ran["wrong"])
            let total = w.outText.split(whereSeparator: \.isNewline).last { $0.hasPrefix("frames received: ") } ?? ""
            let received = Int(total.dropFirst("frames received: ".count).prefix { $0.isNumber }) ?? 0
            #expect(received > 500 && total.contains("opened: 0,"), "\(w.outText)")
            let media = try FileManager.default.contentsOfDirectory(atPath: wrong.path).filter { !$0.hasSuffix(".json") }
            #expect(media.isEmpty, "files with room A's key: \(media)")

            // The delay: each tone onset at A's consumer (Ann) and at B's (the bridge's Ann).
            let log = played.errText
            let direct = try SpeakerCase.latencies(try SpeakerCase.arrivals(arrivalsA), participant: "7", wav: wavsA.appendingPathComponent("7.wav"), log: log)
            let bridged = try SpeakerCase.latencies(try SpeakerCase.arrivals(arrivalsB), participant: "9", wav: wavsB.appendingPathComponent("9.wav"), log: log)
            #expect(direct.count >= 10 && bridged.count >= 10, "onsets: \(direct.count) in A, \(bridged.count) in B")
            let at = { (x: [Double], q: Double) in x.sorted()[min(x.count - 1, Int(Double(x.count) * q))] * 1000 }
            if !direct.isEmpty, !bridged.isEmpty {
                print(String(format: "bridge: tone onsets at the speaker-stream consumers, room A p50 %.0f ms p95 %.0f ms, room B (through the bridge) "
                             + "p50 %.0f ms p95 %.0f ms: %.0f ms added at the median", at(direct, 0.5), at(direct, 0.95), at(bridged, 0.5), at(bridged, 0.95),
                             at(bridged, 0.5) - at(direct, 0.5)))
            }
        }

        @Test("--to-room without --participant: Ann and Bob each bridged as themselves; 15 s after they left room A, they leave room B")
        func everyoneBridgedAsThemselves() async throws {
            let dir = try Scene.tempDirectory("bridge-everyone")
            let ann = try SpeakerCase.bursts(440, in: dir), bob = try SpeakerCase.bursts(660, in: dir)
            let (roomA, roomB) = (try await Scene.createRoom(), try await Scene.createRoom())
            let good = dir.appendingPathComponent("recorded-b")
            let recorder = try SfubotProcess.start(["record", "--janus", Scene.janusURL!, "--room", "\(roomB)", "--key-hex", Self.keyB, "--out", good.path])
            let bridge = try SfubotProcess.start(["relay", "--janus", Scene.janusURL!, "--room", "\(roomA)", "--key-hex", RelayCase.key,
                                                  "--to-room", "\(roomB)", "--to-key-hex", Self.keyB, "--duration", "34"])
            try await Task.sleep(for: .seconds(1))
            let players = [try SpeakerCase.play(ann, as: "7:Ann", room: roomA), try SpeakerCase.play(bob, as: "8:Bob", room: roomA)]
            for p in players { _ = await p.finished() }
            let b = await bridge.finished()
            recorder.signal(SIGTERM)
            _ = await recorder.finished()
            print(b.outText)
            #expect(b.status == 0, "bridge exited \(b.status): \(b.errText.suffix(2000))")
            #expect(b.outText.contains("bridged 2 participant(s)"), "\(b.outText)")
            #expect(b.errText.contains("did not come back within"), "\(b.errText.suffix(1500))")
            let manifest = try RecordingManifest.read(from: good)
            for (display, tone, other) in [("7:Ann", 440.0, 660.0), ("8:Bob", 660.0, 440.0)] {
                let feed = try #require(manifest.feeds.first { $0.display == display && $0.kind == "audio" }, "\(manifest.feeds.map(\.display))")
                #expect(feed.frames.opened > 400 && feed.left != nil, "\(display): \(feed.frames), left \(String(describing: feed.left))")
                let samples = try await RelayCase.audioSamples(good.appendingPathComponent(feed.file))
                #expect(Audio.power(samples[...], at: tone) > 100 * Audio.power(samples[...], at: other), "\(display)'s own tone in room B")
            }
        }

        @Test("the participant killed in room A and back 3 s later on a new feed: the same publisher in room B carries the tone before and after; SIGTERM ends the bridge cleanly")
        func participantBackGoesOnInTheSamePublisher() async throws {
            let dir = try Scene.tempDirectory("bridge-back")
            let source = try await BridgeCase.source(in: dir, seconds: 12)
            let (roomA, roomB) = (try await Scene.createRoom(), try await Scene.createRoom())
            let good = dir.appendingPathComponent("recorded-b")
            let recorder = try SfubotProcess.start(["record", "--janus", Scene.janusURL!, "--room", "\(roomB)", "--key-hex", Self.keyB, "--out", good.path])
            let bridge = try SfubotProcess.start(["relay", "--janus", Scene.janusURL!, "--room", "\(roomA)", "--key-hex", RelayCase.key, "--participant", "7",
                                                  "--to-room", "\(roomB)", "--to-key-hex", Self.keyB, "--display", "9:Ann (bridged)"])
            try await Task.sleep(for: .seconds(1))
            func play() throws -> ChildProcess {
                try SfubotProcess.start(["play", source.path, "--janus", Scene.janusURL!, "--room", "\(roomA)", "--key-hex", RelayCase.key, "--display", "7:Ann"])
            }
            let first = try play()
            try await Task.sleep(for: .seconds(8))
            first.signal(SIGKILL)
            _ = await first.finished()
            try await Task.sleep(for: .seconds(3))
            let second = try play()
            _ = await second.finished()
            bridge.signal(SIGTERM)
            let b = await bridge.finished()
            recorder.signal(SIGTERM)
            _ = await recorder.finished()
            print(b.outText)
            print(b.errText.split(whereSeparator: \.isNewline).filter { $0.contains("back on feed") || $0.contains("was away") }.joined(separator: "\n"))
            #expect(b.status == 0, "bridge exited \(b.status): \(b.errText.suffix(2000))")
            // Killed, Ann's old feed lingers in A until Janus notices; her new one is taken at once.
            #expect(b.errText.contains("is back on feed"), "\(b.errText.suffix(2000))")
            let opened = b.outText.split(whereSeparator: \.isNewline).first { $0.hasPrefix("audio frames received") }
                .flatMap { Int($0.dropFirst("audio frames received: ".count).prefix { $0.isNumber }) } ?? 0
            #expect(opened > 750, "8 s before the kill and 12 s after the return: \(opened) audio frames")
            // One publisher in B throughout: every file the recorder made is the bridge's one feed.
            let manifest = try RecordingManifest.read(from: good)
            let publisher = b.outText.split(separator: "as publisher ").last.flatMap { Int64($0.prefix { $0.isNumber }) }
            #expect(!manifest.feeds.isEmpty && manifest.feeds.allSatisfy { $0.feedID == publisher }, "feeds \(manifest.feeds.map(\.feedID)), bridge \(String(describing: publisher))")
            let audio = manifest.feeds.filter { $0.kind == "audio" }.sorted { ($0.firstMediaTime ?? 0) < ($1.firstMediaTime ?? 0) }
            let before = try await RelayCase.audioSamples(good.appendingPathComponent(try #require(audio.first).file)).prefix(5 * 48000)
            let after = try await RelayCase.audioSamples(good.appendingPathComponent(try #require(audio.last).file)).suffix(5 * 48000)
            let tone = { (x: ArraySlice<Int16>) in Audio.power(x, at: 440) > 100 * Audio.power(x, at: 660) }
            #expect(tone(before) && tone(after), "the tone before the kill and after the return")
        }
    }
}

enum BridgeCase {
    /// `seconds` of H.264 (RelayCase's pattern: 640x360, 15 fps, constrained baseline) with
    /// SpeakerCase's 440 Hz tone bursts as Opus, in Matroska.
    static func source(in dir: URL, seconds: Int) async throws -> URL {
        let bursts = try SpeakerCase.bursts(440, seconds: seconds, in: dir)
        let file = dir.appendingPathComponent("bridge-source.mkv")
        try await runToEnd("""
            matroskamux name=m ! filesink location="\(file.path)"
            videotestsrc num-buffers=\(seconds * 15) pattern=smpte ! video/x-raw,width=640,height=360,framerate=15/1 ! videoconvert
              ! x264enc tune=zerolatency speed-preset=ultrafast bitrate=300 key-int-max=30 bframes=0 threads=1 sliced-threads=false
              ! video/x-h264,profile=constrained-baseline ! h264parse ! m.
            filesrc location="\(bursts.path)" ! wavparse ! audioconvert ! audioresample ! audio/x-raw,rate=48000,channels=2 ! opusenc ! m.
            """)
        return file
    }
}
