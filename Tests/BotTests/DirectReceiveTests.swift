import Bot
import FrameCrypto
import Foundation
import Testing
import TestSupport

extension MediaScene {
    /// The recorder's `--receive-path direct` (issue 42): each received stream's jitter buffer is
    /// an `sfbreorder` (no thread of its own) and packets go from nicesrc to the SRTP decoder in
    /// nicesrc's thread. What the webrtcbin path records, it records: every frame, once and in
    /// order, repaired by retransmission when the network lost a packet.
    @Suite struct DirectReceiveTests {
        /// A recording of one publisher playing `source` (the tone and test pattern of
        /// `RelayCase.source`: 15 fps) for its length, on `path`.
        struct Run {
            let manifest: RecordingManifest
            let out: URL
            let sent: FrameLog, received: FrameLog
            /// Threads of this process named after an rtpjitterbuffer, and all of them, mid-call.
            let jitterBufferThreads: Int, threads: Int
        }

        static func record(_ source: Player.Source, path: ReceivePath, janusURL: String? = nil, room: Int64, in dir: URL) async throws -> Run {
            let ring = KeyRing(current: .random())
            let sent = FrameLog(), received = FrameLog()
            var config = try Scene.config(room: room, display: "9:Rec", protection: .e2ee(ring), tap: received.tap)
            config.receivePath = path
            if let janusURL { config.janusURL = janusURL }
            let out = dir.appendingPathComponent("rec-\(path)")
            let recorderConfig = config
            let recording = Task { try await Recorder(config: recorderConfig, directory: out).run() }
            try await Task.sleep(for: .seconds(1))
            var playerConfig = try Scene.config(room: room, display: "3:Sender", protection: .e2ee(ring), tap: sent.tap)
            if let janusURL { playerConfig.janusURL = janusURL }
            let player = Task { [playerConfig] in try await Player(config: playerConfig, source: source, duration: source.isTestPattern ? .seconds(8) : nil).run() }
            try await Task.sleep(for: .seconds(5))
            let names = Self.threadNames()
            _ = try await player.value
            try await Task.sleep(for: .seconds(1))
            recording.cancel()
            return Run(manifest: try await recording.value, out: out, sent: sent, received: received,
                       jitterBufferThreads: names.filter { $0.hasPrefix("rtpjitterbuffer") }.count, threads: names.count)
        }

        /// This process's threads by name (GStreamer names a pad's task after its element).
        static func threadNames() -> [String] {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
            return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
                .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        }

        /// Where the frames the recorder received sit among those the player sealed (sealed
        /// frames are unique: each has its own IV and tag): `start`, the first one's index;
        /// `outOfPlace`, received frames that are not the next one sent (a frame lost or
        /// reordered in between puts every later one out of place); `notReceived`, frames sent
        /// after the first one received that never came.
        static func placement(sent: [[UInt8]], received: [[UInt8]]) -> (start: Int, outOfPlace: Int, notReceived: Int)? {
            var index: [[UInt8]: Int] = [:]
            for (i, f) in sent.enumerated() { index[f] = i }
            guard let first = received.first, let start = index[first] else { return nil }
            let outOfPlace = received.enumerated().filter { index[$0.element] != start + $0.offset }.count
            return (start, outOfPlace, sent.count - start - received.count)
        }

        static func isVideo(_ f: [UInt8]) -> Bool { f.count > 4 && f[0] == 0 && f[1] == 0 }

        /// rtpbin's lip sync works through sfbreorder's `sink_rtcp` pad and `handle-sync` signal:
        /// once the streams' RTCP sender reports are in (Janus sends them every second), it sets
        /// `ts-offset` on the stream that arrives earlier. The first packets wait for it, so the
        /// first second is stamped as the rest: the flash and the tick together from the first
        /// flash on, and no hole in the audio's timestamps where the offset came. (Before,
        /// packets left at once and those before the reports had no offset: tick − flash −84 ms
        /// at the first flash, and the audio's span read 2–4 frames more than it held.)
        @Test("direct path: from the first frame on, the test pattern's flash and tick are in sync by the file's timestamps, and the audio's timestamps have no hole")
        func flashAndTickInSync() async throws {
            let dir = try Scene.tempDirectory("direct-sync")
            let run = try await Self.record(.testPattern, path: .direct, room: try await Scene.createRoom(), in: dir)
            let video = try #require(run.manifest.feeds.first { $0.kind == "video" })
            let audio = try #require(run.manifest.feeds.first { $0.kind == "audio" })
            let file = run.out.appendingPathComponent(video.file)
            let timed = try await AVSync.tickMinusFlash(file, timed: true)
            let joined = try await AVSync.tickMinusFlash(file)
            print("direct sync: tick − flash on the timeline \(timed.map { Int($0 * 1000) }) ms; audio joined end to end \(joined.map { Int($0 * 1000) }) ms")
            #expect(timed.count >= 5, "\(timed.count) flashes found")
            #expect(timed.allSatisfy { abs($0) <= 0.040 }, "tick − flash: \(timed.map { Int($0 * 1000) }) ms")
            // 20 ms frames from the first timestamp to the last: as many as were written.
            let first = try #require(audio.firstMediaTime), last = try #require(audio.lastMediaTime)
            let span = Int(((last - first) / 0.020).rounded()) + 1
            #expect(audio.frames.droppedTotal == 0 && span - audio.frames.opened <= 1, "\(audio.frames.opened) audio frames opened, \(span) in the span \(first)…\(last) s")
        }

        @Test("direct path: the tone and the pictures, every audio frame sent after the first recorded arrives once and in order, every picture opens, and no rtpjitterbuffer thread")
        func recordsEverythingInOrder() async throws {
            let dir = try Scene.tempDirectory("direct-receive")
            let source = try await RelayCase.source(in: dir, seconds: 10)
            let run = try await Self.record(.file(source.path), path: .direct, room: try await Scene.createRoom(), in: dir)
            let video = try #require(run.manifest.feeds.first { $0.kind == "video" })
            let audio = try #require(run.manifest.feeds.first { $0.kind == "audio" })
            print("direct receive: \(run.threads) threads, \(run.jitterBufferThreads) rtpjitterbuffer; audio \(audio.frames.opened) opened, video \(video.frames.opened)")
            #expect(run.jitterBufferThreads == 0, "threads: \(Self.threadNames().sorted())")

            // Audio: the sealed frames as they left the player and as they reached the recorder.
            let sent = run.sent.frames(.afterSeal).filter { !Self.isVideo($0) }
            let received = run.received.frames(.beforeOpen).filter { !Self.isVideo($0) }
            let place = try #require(Self.placement(sent: sent, received: received), "the first frame received was never sent")
            #expect(place.outOfPlace == 0 && place.notReceived <= 3, "\(place); \(received.count) received of \(sent.count) sent")
            #expect(received.count >= 400, "10 s of 20 ms frames, less the subscription's start: \(received.count)")
            #expect(audio.frames.droppedTotal == 0 && audio.frames.opened == received.count)

            // Video: one picture every 1/15 s from the first to the last written, each opened.
            let first = try #require(video.firstMediaTime), last = try #require(video.lastMediaTime)
            #expect(video.frames.droppedTotal == 0, "\(video.frames)")
            #expect(video.frames.opened == Int(((last - first) * 15).rounded()) + 1, "\(video.frames.opened) pictures from \(first) to \(last) s")

            let file = run.out.appendingPathComponent(video.file)
            let samples = try await Audio.decodeTimed(file)
            let f = try #require(Audio.dominantFrequency(samples))
            #expect(abs(f - 440) <= 440 * 0.02, "dominant frequency \(f) Hz")
            let quiet = Audio.quietWindows(samples)
            #expect(quiet.count <= 1, "quiet 100 ms windows at \(quiet) s")
            let luma = try await Audio.videoLuma(file)
            #expect(luma.count == video.frames.opened, "\(luma.count) pictures decoded of \(video.frames.opened)")
            // SMPTE bars: neither black nor white.
            #expect(luma.allSatisfy { (60...200).contains($0) }, "\(Set(luma.map { Int($0) }).sorted())")
        }

        @Test("direct path: the recorder's files have the same frames as on webrtcbin's path, which has its rtpjitterbuffer threads", .timeLimit(.minutes(2)))
        func sameFramesAsWebRTCBin() async throws {
            let dir = try Scene.tempDirectory("direct-vs-webrtcbin")
            let source = try await RelayCase.source(in: dir, seconds: 6)
            let reference = try await Self.record(.file(source.path), path: .webrtcbin, room: try await Scene.createRoom(), in: dir)
            let direct = try await Self.record(.file(source.path), path: .direct, room: try await Scene.createRoom(), in: dir)
            print("threads mid-call: webrtcbin \(reference.threads) (\(reference.jitterBufferThreads) rtpjitterbuffer), direct \(direct.threads) (\(direct.jitterBufferThreads))")
            // The count is real: webrtcbin's path has one per stream (audio, video).
            #expect(reference.jitterBufferThreads >= 2 && direct.jitterBufferThreads == 0)
            #expect(direct.threads + 2 <= reference.threads, "direct \(direct.threads), webrtcbin \(reference.threads)")
            for kind in ["audio", "video"] {
                let a = try #require(reference.manifest.feeds.first { $0.kind == kind }), b = try #require(direct.manifest.feeds.first { $0.kind == kind })
                #expect(a.frames.droppedTotal == 0 && b.frames.droppedTotal == 0, "\(kind): \(a.frames); \(b.frames)")
                // The same length of the same source (each misses its own subscription start).
                let spanA = (a.lastMediaTime ?? 0) - (a.firstMediaTime ?? 0), spanB = (b.lastMediaTime ?? 0) - (b.firstMediaTime ?? 0)
                #expect(abs(spanA - spanB) <= 1.0, "\(kind): webrtcbin \(spanA) s, direct \(spanB) s")
            }
        }
    }
}

extension Player.Source {
    var isTestPattern: Bool { if case .testPattern = self { true } else { false } }
}
