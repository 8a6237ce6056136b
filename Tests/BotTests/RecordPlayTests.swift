import Bot
import FrameCrypto
import Foundation
import Testing
import TestSupport

/// Players and recorders in real rooms on the real Janus (run through `make test`).
extension MediaScene {
@Suite struct RecordPlayTests {
    /// Starts recorders, plays each (file, display, protection) at once, stops the recorders
    /// (as Ctrl-C would) a moment after the players finish, and returns their manifests.
    func session(
        room: Int64, players: [(URL, String, FrameProtection)], recorders: [(URL, FrameProtection)],
        playerTap: FrameTap? = nil, recorderTap: FrameTap? = nil, path: ReceivePath = .direct
    ) async throws -> (players: [Player.Report], manifests: [RecordingManifest]) {
        let recording = try recorders.enumerated().map { i, r in
            var config = try Scene.config(room: room, display: "90\(i):Recorder \(i)", protection: r.1, tap: recorderTap)
            config.receivePath = path
            let recorder = Recorder(config: config, directory: r.0)
            return Task { try await recorder.run() }
        }
        try await Task.sleep(for: .seconds(1))
        let reports = try await withThrowingTaskGroup(of: Player.Report.self) { group in
            for (file, display, protection) in players {
                let config = try Scene.config(room: room, display: display, protection: protection, tap: playerTap)
                group.addTask { try await Player(config: config, file: file.path).run() }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        try await Task.sleep(for: .seconds(1.5))
        recording.forEach { $0.cancel() }
        var manifests: [RecordingManifest] = []
        for r in recording { manifests.append(try await r.value) }
        return (reports, manifests)
    }

    /// On both receive paths: direct (the default) and webrtcbin (the fallback).
    @Test(arguments: ReceivePath.allCases)
    func encryptedToneIsRecordedDecrypted(path: ReceivePath) async throws {
        let dir = try Scene.tempDirectory("tone-\(path)")
        let tone = try await Audio.tone(440, seconds: 12, in: dir)
        let ring = KeyRing(current: .random())
        let out = dir.appendingPathComponent("rec")
        let (reports, manifests) = try await session(
            room: try await Scene.createRoom(), players: [(tone, "42:Alice", .e2ee(ring))], recorders: [(out, .e2ee(ring))], path: path)

        #expect(reports[0].framesSent >= 599, "12 s of 20 ms frames, from the first")
        let feed = try #require(manifests[0].feeds.first)
        #expect(manifests[0].feeds.count == 1)
        #expect(feed.userID == "42" && feed.displayName == "Alice" && feed.feedID == reports[0].publisherID)
        #expect(feed.file == "\(feed.feedID)-42.opus")
        #expect(feed.frames.droppedTotal == 0 && feed.frames.opened == feed.frames.received)
        #expect(feed.firstFrame != nil && feed.lastFrame! > feed.firstFrame!)

        let samples = try await Audio.decode(out.appendingPathComponent(feed.file))
        let seconds = Double(samples.count) / 48000
        // What Janus forwards before the recorder's subscription is up (~0.2 s here, ~1 s on a
        // loaded 2-core machine) is not heard: subscribe-after-publish, as on the phones.
        #expect(seconds >= 0.9 * 12, "recorded \(seconds) s of 12 s")
        let f = try #require(Audio.dominantFrequency(samples))
        #expect(abs(f - 440) <= 440 * 0.02, "dominant frequency \(f) Hz")

        // The manifest on disk is the one returned.
        let onDisk = try RecordingManifest.read(from: out)
        #expect(onDisk.feeds.map(\.feedID) == [feed.feedID] && onDisk.ended != nil)
    }

    @Test func loopingPlaysTheFileAgainWithoutAGap() async throws {
        let dir = try Scene.tempDirectory("loop")
        let tone = try await Audio.tone(440, seconds: 3, in: dir)
        let ring = KeyRing(current: .random())
        let room = try await Scene.createRoom()
        let out = dir.appendingPathComponent("rec")
        let recording = Task { try await Recorder(config: try Scene.config(room: room, display: "9:Rec", protection: .e2ee(ring)), directory: out).run() }
        try await Task.sleep(for: .seconds(1))
        let config = try Scene.config(room: room, display: "8:Loop", protection: .e2ee(ring))
        let report = try await Player(config: config, source: .file(tone.path), loop: true, duration: .seconds(7.5)).run()
        try await Task.sleep(for: .seconds(1))
        recording.cancel()
        let manifest = try await recording.value

        // 7.5 s of a 3 s file: more than two passes (300 frames), paced in real time (not a burst:
        // at most 375 and a few). The 7.5 s count from the join, so a loaded machine's slow pipeline
        // start sends a few frames fewer (CI: 359).
        #expect((301...380).contains(report.framesSent), "\(report.framesSent) frames in 7.5 s")
        let feed = try #require(manifest.feeds.first)
        let samples = try await Audio.decode(out.appendingPathComponent(feed.file))
        #expect(Double(samples.count) / 48000 >= 6, "\(Double(samples.count) / 48000) s recorded")
        #expect(abs((Audio.dominantFrequency(samples) ?? 0) - 440) <= 440 * 0.02)
        // No silence where the file starts over: every 100 ms of the recording holds the tone.
        let quiet = Audio.quietWindows(samples)
        #expect(quiet.isEmpty, "quiet 100 ms windows at \(quiet) s")
    }

    @Test func wrongKeyWritesNoAudioAndCountsDrops() async throws {
        let dir = try Scene.tempDirectory("wrongkey")
        let tone = try await Audio.tone(440, seconds: 4, in: dir)
        let out = dir.appendingPathComponent("rec")
        let (_, manifests) = try await session(
            room: try await Scene.createRoom(), players: [(tone, "1:Sender", .e2ee(KeyRing(current: .random())))],
            recorders: [(out, .e2ee(KeyRing(current: .random())))])

        // Nothing opened, so nothing written: no file, the track listed as unrecorded with its counters.
        #expect(manifests[0].feeds.isEmpty && manifests[0].errors.isEmpty)
        let feed = try #require(manifests[0].unrecorded.first)
        #expect(feed.frames.received > 100)
        #expect(feed.frames.opened == 0)
        #expect(feed.frames.dropped["no_key_opens"] == feed.frames.received)
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent(feed.file).path), "no file with no frame")
    }

    @Test func plainPublisherIsDroppedByAnEncryptedRecorder() async throws {
        let dir = try Scene.tempDirectory("plain")
        let tone = try await Audio.tone(440, seconds: 4, in: dir)
        let out = dir.appendingPathComponent("rec")
        let (_, manifests) = try await session(
            room: try await Scene.createRoom(), players: [(tone, "1:Plain", .none)],
            recorders: [(out, .e2ee(KeyRing(current: .random())))])

        #expect(manifests[0].feeds.isEmpty)
        let feed = try #require(manifests[0].unrecorded.first)
        #expect(feed.frames.received > 100)
        #expect(feed.frames.opened == 0)
        #expect(feed.frames.dropped["no_marker"] == feed.frames.received, "fail closed: every plain frame dropped")
    }

    @Test func bytesInFlightAreCiphertext() async throws {
        let dir = try Scene.tempDirectory("flight")
        let tone = try await Audio.tone(440, seconds: 5, in: dir)
        let ring = KeyRing(current: .random())
        let sent = FrameLog(), received = FrameLog()
        let keyed = dir.appendingPathComponent("keyed"), keyless = dir.appendingPathComponent("keyless")
        let room = try await Scene.createRoom()
        // A keyed recorder taps frames around its opener; a recorder without E2EE writes what
        // it receives as is, i.e. what anyone on the path without the key would get.
        let keylessConfig = try Scene.config(room: room, display: "99:Eavesdropper", protection: .none)
        let eavesdropper = Task { try await Recorder(config: keylessConfig, directory: keyless).run() }
        let (_, manifests) = try await session(
            room: room, players: [(tone, "5:Speaker", .e2ee(ring))], recorders: [(keyed, .e2ee(ring))],
            playerTap: sent.tap, recorderTap: received.tap)
        eavesdropper.cancel()
        let keylessManifest = try await eavesdropper.value

        let ciphertext = received.frames(.beforeOpen), plaintext = received.frames(.afterOpen)
        #expect(ciphertext.count > 150)
        #expect(ciphertext.allSatisfy { $0.first == 0xFF }, "every payload starts with the marker")
        #expect(ciphertext.count == plaintext.count)
        #expect(zip(ciphertext, plaintext).allSatisfy { $0.count == $1.count + 29 }, "29 bytes longer than its plaintext")
        // What came out of the opener is exactly what the sender's encoder produced.
        let encoded = Set(sent.frames(.beforeSeal))
        #expect(plaintext.allSatisfy { encoded.contains($0) })
        #expect(Set(sent.frames(.afterSeal)).isDisjoint(with: encoded), "no plaintext frame left the sender")
        #expect(manifests[0].feeds.first?.frames.droppedTotal == 0)

        // The ciphertext does not decode as the tone.
        let file = try #require(keylessManifest.feeds.first).file
        let samples = (try? await Audio.decode(keyless.appendingPathComponent(file))) ?? []
        if samples.count >= 48000 {
            #expect(Audio.share(samples, at: 440) < 0.05, "the tone must not be audible without the key")
        }
    }

    /// The recorder's one bundled socket carries every feed of the room: it asks 4 MiB of
    /// receive buffer (the kernel holds twice that; without CAP_NET_ADMIN, twice rmem_max),
    /// where the default held about 40 ms of 20 phones and a loaded machine lost packets.
    /// The player's socket keeps the default: the recorder sets only its selected socket.
    @Test func theRecordersMediaSocketGetsItsReceiveBuffer() async throws {
        let dir = try Scene.tempDirectory("rcvbuf")
        let tone = try await Audio.tone(440, seconds: 5, in: dir)
        let ring = KeyRing(current: .random())
        let room = try await Scene.createRoom()
        let recorder = Recorder(config: try Scene.config(room: room, display: "900:Recorder", protection: .e2ee(ring)),
                                directory: dir.appendingPathComponent("rec"))
        let recording = Task { try await recorder.run() }
        try await Task.sleep(for: .seconds(1))
        let player = Player(config: try Scene.config(room: room, display: "1:Tone", protection: .e2ee(ring)), file: tone.path)
        let playing = Task { try await player.run() }
        let rmemMax = Int((try? String(contentsOfFile: "/proc/sys/net/core/rmem_max", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        let held = geteuid() == 0 ? 8 << 20 : 2 * min(rmemMax, 4 << 20)
        var buffers: [Int] = []
        for _ in 0..<40 {
            buffers = try await Self.receiveBuffers(of: getpid())
            if buffers.contains(where: { $0 >= held }) && buffers.count >= 2 { break }
            try await Task.sleep(for: .milliseconds(250))
        }
        _ = try await playing.value
        recording.cancel()
        let manifest = try await recording.value
        #expect(manifest.feeds.count == 1)
        #expect(manifest.receiveDrops == 0, "read from the kernel, and none with that buffer for one feed")
        #expect(buffers.filter { $0 == held }.count == 1, "one socket (the recorder's) holds \(held) bytes: \(buffers)")
        #expect(buffers.filter { $0 < 1 << 20 }.count >= 1, "the player's socket keeps the default: \(buffers)")
    }

    /// `rb` of each UDP socket process `pid` holds (`ss -m`), the receive buffer in bytes.
    static func receiveBuffers(of pid: Int32) async throws -> [Int] {
        let out = try await ChildProcess.run("/usr/bin/ss", ["-H", "-u", "-a", "-m", "-p", "-n"]).outText
        var mine = false, buffers: [Int] = []
        for line in out.split(separator: "\n") {
            if line.contains("users:") { mine = line.contains("pid=\(pid),") }
            else if mine, let r = line.range(of: #"rb(\d+)"#, options: .regularExpression) {
                buffers.append(Int(line[r].dropFirst(2)) ?? 0)
                mine = false
            }
        }
        return buffers
    }

    @Test func everyRecordingHoldsExactlyItsPublisher() async throws {
        let dir = try Scene.tempDirectory("multi")
        let low = try await Audio.tone(440, seconds: 6, in: dir), high = try await Audio.tone(1000, seconds: 6, in: dir)
        let ring = KeyRing(current: .random())
        let outs = (0..<3).map { dir.appendingPathComponent("rec\($0)") }
        let (_, manifests) = try await session(
            room: try await Scene.createRoom(),
            players: [(low, "1:Low", .e2ee(ring)), (high, "2:High", .e2ee(ring))],
            recorders: outs.map { ($0, .e2ee(ring)) })

        let expected: [String: (Double, Double)] = ["1": (440, 1000), "2": (1000, 440)]
        for (manifest, out) in zip(manifests, outs) {
            #expect(Set(manifest.feeds.map(\.userID)) == ["1", "2"])
            for feed in manifest.feeds {
                let (mine, other) = try #require(expected[feed.userID])
                let samples = try await Audio.decode(out.appendingPathComponent(feed.file))
                let f = try #require(Audio.dominantFrequency(samples))
                #expect(abs(f - mine) <= mine * 0.02, "\(feed.file): \(f) Hz, expected \(mine)")
                #expect(Audio.share(samples, at: other) < 0.01, "\(feed.file) holds the other publisher")
                #expect(feed.frames.droppedTotal == 0)
            }
        }
    }

    @Test func mixHoldsEveryPublisherWhileTheyPublish() async throws {
        let dir = try Scene.tempDirectory("mix")
        let long = try await Audio.tone(440, seconds: 7, in: dir), short = try await Audio.tone(1000, seconds: 3, in: dir)
        let ring = KeyRing(current: .random())
        let room = try await Scene.createRoom()
        let mixFile = dir.appendingPathComponent("call-mix.opus")
        let recording = Task {
            try await Recorder(config: try Scene.config(room: room, display: "9:Rec", protection: .e2ee(ring)),
                               directory: dir.appendingPathComponent("rec"), mixFile: mixFile).run()
        }
        try await Task.sleep(for: .seconds(1))
        let first = Task { try await Player(config: try Scene.config(room: room, display: "1:Long", protection: .e2ee(ring)), file: long.path).run() }
        try await Task.sleep(for: .seconds(2))
        _ = try await Player(config: try Scene.config(room: room, display: "2:Short", protection: .e2ee(ring)), file: short.path).run()
        _ = try await first.value
        try await Task.sleep(for: .seconds(1))
        recording.cancel()
        let manifest = try await recording.value
        #expect(manifest.mix == mixFile.path)
        #expect(manifest.feeds.count == 2, "and each publisher still has its own file")

        // Quarter seconds of the mix: the 440 Hz publisher alone, then both, then 440 Hz alone again.
        let samples = try await Audio.decode(mixFile)
        let window = 12000
        let amplitude = { (w: ArraySlice<Int16>, f: Double) in 2 * Audio.power(w, at: f).squareRoot() / Double(w.count) }
        let heard = stride(from: 0, to: samples.count - window, by: window).map { i -> String in
            let w = samples[i..<(i + window)]
            switch (amplitude(w, 440) > 2000, amplitude(w, 1000) > 2000) {
            case (true, true): return "B"
            case (true, false): return "L"
            case (false, true): return "S"
            case (false, false): return "-"
            }
        }.joined()
        let summary = heard.replacing(/(.)\1*/) { String($0.output.1) }
        #expect(summary.contains("LBL") && !summary.contains("S"), "per 250 ms (L: 440 Hz alone, B: both, S: 1000 Hz alone): \(heard)")
        // Whole, the first second too: frames that reach the mix late (held for lip sync on the
        // direct path) are still mixed.
        #expect(heard.filter { $0 == "B" }.count >= 11, "the short publisher's 3 s: \(heard)")
        #expect(heard.filter { $0 != "-" }.count >= 27, "the long publisher's 7 s: \(heard)")
    }

    @Test func aBranchThatCannotBeBuiltLeavesNoFileBehind() async throws {
        let dir = try Scene.tempDirectory("badbranch")
        // A pipelines folder whose audio recording branch lacks the `file` element the bot needs.
        let pipelines = dir.appendingPathComponent("pipelines")
        try FileManager.default.copyItem(at: try PipelineLibrary().directory, to: pipelines)
        let branch = pipelines.appendingPathComponent("record-audio.pipeline")
        try String(contentsOf: branch, encoding: .utf8).replacingOccurrences(of: "name=file ", with: "").write(to: branch, atomically: true, encoding: .utf8)
        let tone = try await Audio.tone(440, seconds: 3, in: dir)
        let ring = KeyRing(current: .random())
        let room = try await Scene.createRoom()
        var config = try Scene.config(room: room, display: "9:Rec", protection: .e2ee(ring))
        config.pipelines = try PipelineLibrary(directory: pipelines.path)
        let out = dir.appendingPathComponent("rec")
        let recording = Task { [config] in try await Recorder(config: config, directory: out).run() }
        try await Task.sleep(for: .seconds(1))
        _ = try await Player(config: try Scene.config(room: room, display: "4:Tone", protection: .e2ee(ring)), file: tone.path).run()
        recording.cancel()
        let manifest = try await recording.value
        #expect(manifest.feeds.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path) == ["manifest.json"], "no empty or half-built recording")
    }
}
}
