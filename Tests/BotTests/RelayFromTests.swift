import Bot
import FrameCrypto
import Foundation
import Testing
import TestSupport

extension MediaScene {
    /// `sfubot relay --from`: ffmpeg pushes a live source (440 Hz AAC, H.264 constrained baseline)
    /// into a real server started here on 127.0.0.1; the relay publishes it into the room, sealed;
    /// sfubot's recorder records the room with the key (and a second one with a wrong key).
    /// The source is killed and started again 3 s later: the relay goes on as the same publisher.
    @Suite(.enabled(if: RelayServers.missing == nil, "\(RelayServers.missing ?? "")")) struct RelayFromTests {
        @Test("RTMP in: the tone and the source's own H.264, sealed; the source killed and back resumes in the same feed; a wrong key opens nothing")
        func rtmpSourceResumesInTheSameFeed() async throws {
            let dir = try Scene.tempDirectory("relay-from-rtmp")
            let port = try RelayServers.freePort()
            let nginx = try await RelayServers.nginxRTMP(port: port, in: dir)
            defer { Task { await nginx.stop() } }
            let url = "rtmp://127.0.0.1:\(port)/live/source"
            let ran = try await RelayFromCase.scene(in: dir, from: url) { try RelayFromCase.push(to: url, format: "flv") }
            try await RelayFromCase.check(ran, dir: dir)
        }

        @Test("SRT in (through srt-live-transmit): the same, as MPEG-TS")
        func srtSourceResumesInTheSameFeed() async throws {
            let dir = try Scene.tempDirectory("relay-from-srt")
            let (port, readPort) = (try RelayServers.freePort(), try RelayServers.freePort())
            let server = try await RelayServers.srt(port: port, readPort: readPort)
            defer { Task { await server.stop() } }
            let ran = try await RelayFromCase.scene(in: dir, from: "srt://127.0.0.1:\(readPort)") {
                try RelayFromCase.push(to: "srt://127.0.0.1:\(port)", format: "mpegts")
            }
            try await RelayFromCase.check(ran, dir: dir)
        }

        @Test("RTMP in, H.264 High profile (not what the room takes): encoded once to constrained baseline at 10 fps, and it decodes")
        func highProfileIsEncodedOnce() async throws {
            let dir = try Scene.tempDirectory("relay-from-high")
            let port = try RelayServers.freePort()
            let nginx = try await RelayServers.nginxRTMP(port: port, in: dir)
            defer { Task { await nginx.stop() } }
            let url = "rtmp://127.0.0.1:\(port)/live/high"
            let room = try await Scene.createRoom()
            let metrics = try RelayServers.freePort(), out = dir.appendingPathComponent("rec")
            let recorder = try SfubotProcess.start(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", RelayCase.key,
                                                    "--out", out.path, "--metrics-port", "\(metrics)"])
            let source = try RelayFromCase.push(to: url, format: "flv", high: true)
            let relay = try SfubotProcess.start(["relay", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", RelayCase.key, "--from", url])
            let recorded = await eventually(within: 30) {
                let text = await MediaScene.MetricsCLITests.scrape(metrics) ?? ""
                return PrometheusText.value(#"sfubot_frames_opened_total{kind="video",format="ecall"}"#, in: text) ?? 0 >= 40
            }
            relay.signal(SIGTERM)
            let ran = await relay.finished()
            source.signal(SIGKILL)
            recorder.signal(SIGTERM)
            _ = await recorder.finished()
            #expect(recorded && ran.status == 0, "\(ran.status): \(ran.errText.suffix(2000))")
            #expect(ran.outText.contains("video encoded once") && ran.errText.contains("H.264 high"), "\(ran.outText)")
            let video = try #require(try RecordingManifest.read(from: out).feeds.first { $0.kind == "video" })
            let seconds = (video.lastMediaTime ?? 0) - (video.firstMediaTime ?? 0), fps = Double(video.frames.received) / max(seconds, 0.1)
            #expect(video.parts?.allSatisfy { $0.profile == "constrained-baseline" } == true && fps > 7 && fps < 11, "\(fps) fps, \(String(describing: video.parts))")
            let decoded = try await RelayFromCase.decodedFrames(out.appendingPathComponent(video.file))
            #expect(decoded.errors.isEmpty && decoded.frames >= 40 && video.frames.opened == video.frames.received, "\(decoded)")
            print("relay --from, High profile: \(video.frames.received) frames at \(String(format: "%.1f", fps)) fps, \(decoded.frames) decoded")
        }
    }
}

/// The scene both sources share, and what is read back from the recordings.
enum RelayFromCase {
    /// ffmpeg (Debian) as a live encoder: 440 Hz AAC and a 640x360 15 fps test picture in H.264
    /// constrained baseline, a keyframe every 2 s, one slice per picture, at real time (`-re`).
    /// `high`: High profile (veryfast keeps CABAC and 8x8 transforms; ultrafast drops to baseline).
    static func encoding(_ format: String, high: Bool = false) -> [String] {
        ["-hide_banner", "-loglevel", "error", "-re", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
         "-f", "lavfi", "-i", "testsrc=size=640x360:rate=15", "-c:v", "libx264", "-profile:v", high ? "high" : "baseline",
         "-preset", high ? "veryfast" : "ultrafast", "-g", "30", "-threads", "1", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "96k", "-f", format]
    }

    static func push(to url: String, format: String, high: Bool = false) throws -> ChildProcess {
        try ChildProcess("/usr/bin/ffmpeg", encoding(format, high: high) + [url])
    }

    struct Ran {
        var relay: ChildProcess.Finished
        var good: URL
        var wrong: URL
        var wrongRun: ChildProcess.Finished
        /// Seconds between the kill and the restart of the source.
        var away: Double
    }

    /// Recorders (the key, a wrong key), the relay from `from`, the source started by `start`;
    /// 3 s of tone recorded, the source killed, started again 3 s later, 3 s more recorded.
    static func scene(in dir: URL, from: String, start: @Sendable () throws -> ChildProcess) async throws -> Ran {
        let room = try await Scene.createRoom()
        let metrics = try RelayServers.freePort()
        let good = dir.appendingPathComponent("rec"), wrong = dir.appendingPathComponent("wrong")
        func record(_ out: URL, _ key: String, _ extra: [String]) throws -> ChildProcess {
            try SfubotProcess.start(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key, "--out", out.path] + extra)
        }
        let recorder = try record(good, RelayCase.key, ["--metrics-port", "\(metrics)"])
        let wrongRecorder = try record(wrong, RelayCase.otherKey, [])
        var source = try start()
        let relay = try SfubotProcess.start(["relay", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", RelayCase.key,
                                             "--from", from, "--display", "9:Studio", "--duration", "60"])
        func opened() async -> Double {
            let text = await MediaScene.MetricsCLITests.scrape(metrics) ?? ""
            return PrometheusText.value(#"sfubot_frames_opened_total{kind="audio",format="ecall"}"#, in: text) ?? 0
        }
        let before = await eventually(within: 30) { await opened() >= 150 }
        source.signal(SIGKILL)
        _ = await source.exit()
        let killed = ContinuousClock.now
        try await Task.sleep(for: .seconds(3))
        source = try start()
        let waited = (ContinuousClock.now - killed).components
        let away = Double(waited.seconds) + Double(waited.attoseconds) / 1e18
        let atRestart = await opened()
        let after = await eventually(within: 30) { await opened() >= atRestart + 200 }
        relay.signal(SIGTERM)
        let ran = await relay.finished()
        source.signal(SIGKILL)
        _ = await source.exit()
        for r in [recorder, wrongRecorder] { r.signal(SIGTERM) }
        _ = await recorder.finished()
        let wrongRun = await wrongRecorder.finished()
        #expect(before && after, "3 s recorded before the kill, 4 s after: \(before), after the restart: \(after); relay: \(ran.errText.suffix(2500))")
        return Ran(relay: ran, good: good, wrong: wrong, wrongRun: wrongRun, away: away)
    }

    static func check(_ ran: Ran, dir: URL) async throws {
        let out = ran.relay.outText, log = ran.relay.errText
        #expect(ran.relay.status == 0, "relay exited \(ran.relay.status): \(log.suffix(2500))")
        #expect(out.contains("connected 2 times, dropped 1 times") && out.contains("rejoins: 0"), "\(out)")
        #expect(out.contains("video sent as the source sent it") && log.contains("not re-encoded"), "\(out)")
        #expect(log.contains("dropped (") && log.contains("is back after"), "the log says it: \(log.suffix(2500))")
        let publisher = out.split(separator: "publisher ").last.flatMap { Int64($0.prefix { $0.isNumber }) }
        print(log.split(whereSeparator: \.isNewline).filter { $0.contains("source ") || $0.contains("Janus stopped") }.joined(separator: "\n"))

        // One publisher throughout: every track the recorder saw is that feed's, one participant.
        // One publisher throughout: every track the recorder saw is that feed's, one participant. (A
        // gap longer than the recorder's media-loss timeout, 4 s, makes it start a second file.)
        let manifest = try RecordingManifest.read(from: ran.good)
        #expect(!manifest.feeds.isEmpty && manifest.feeds.allSatisfy { $0.feedID == publisher }, "feeds \(manifest.feeds.map(\.feedID)), publisher \(String(describing: publisher))")
        #expect(manifest.participants.count == 1, "\(manifest.participants.count) participants, files \(manifest.feeds.map(\.file))")
        let audio = manifest.feeds.filter { $0.kind == "audio" }.sorted { ($0.firstMediaTime ?? 0) < ($1.firstMediaTime ?? 0) }
        let video = manifest.feeds.filter { $0.kind == "video" }
        let (a, v) = (audio.reduce(0) { $0 + $1.frames.received }, video.reduce(0) { $0 + $1.frames.received })
        #expect(manifest.feeds.allSatisfy { $0.frames.opened == $0.frames.received && $0.frames.droppedTotal == 0 } && a > 300 && v > 60,
                "\(manifest.feeds.map(\.frames))")

        let firstFile = ran.good.appendingPathComponent(try #require(audio.first).file), lastFile = ran.good.appendingPathComponent(try #require(audio.last).file)
        let second = 48000
        let before = try await RelayCase.audioSamples(firstFile).prefix(2 * second), after = try await RelayCase.audioSamples(lastFile).suffix(2 * second)
        let first = try #require(Audio.dominantFrequency(Array(before))), last = try #require(Audio.dominantFrequency(Array(after)))
        #expect(abs(first - 440) <= 9 && abs(last - 440) <= 9, "the tone before the drop \(first) Hz and after \(last) Hz")
        // The gap: within a file between two packets, or between the files of the feed.
        var gap = 0.0
        for feed in audio { gap = max(gap, try await largestGap(ran.good.appendingPathComponent(feed.file), stream: "a:0")) }
        for (p, n) in zip(audio, audio.dropFirst()) { gap = max(gap, (n.firstMediaTime ?? 0) - (p.lastMediaTime ?? 0)) }
        print("relay --from: source away \(String(format: "%.1f", ran.away)) s; largest gap in the recorded audio \(String(format: "%.2f", gap)) s (\(audio.count) file(s)); \(out)")
        #expect(gap >= ran.away - 0.5 && gap <= ran.away + 8, "gap \(gap) s for \(ran.away) s away")

        // Video decodes, at the source's 15 fps (a transcode sends 10 at most) with the source's SPS/PPS.
        let files = Set(manifest.feeds.map(\.file)).sorted().map { ran.good.appendingPathComponent($0) }
        var frames = 0
        for f in files {
            let decoded = try await decodedFrames(f)
            frames += decoded.frames
            #expect(decoded.errors.isEmpty, "\(f.lastPathComponent): \(decoded.errors.prefix(500))")
        }
        #expect(frames >= 60, "\(frames) frames decoded")
        let file = try #require(files.first)
        let reference = dir.appendingPathComponent("reference.flv")
        let made = try await ChildProcess.run("/usr/bin/ffmpeg", ["-y"] + encoding("flv").filter { $0 != "-re" } + ["-t", "1", reference.path])
        #expect(made.status == 0, "\(made.errText)")
        let sent = try await RelayCase.parameterSets(reference), recorded = try await RelayCase.parameterSets(file)
        #expect(!recorded.sps.isEmpty && recorded.sps == sent.sps && recorded.pps == sent.pps, "SPS/PPS: source \(sent.sps) \(sent.pps), recorded \(recorded.sps) \(recorded.pps)")
        let seconds = video.reduce(0.0) { $0 + ($1.lastMediaTime ?? 0) - ($1.firstMediaTime ?? 0) } - (video.count == 1 ? gap : 0)
        #expect(Double(v) / seconds > 12, "\(v) frames in \(seconds) s: not the source's 15 fps")

        // Fail closed: with the wrong key not one frame opens, so nothing was ever sent in the clear.
        let wrong = try RecordingManifest.read(from: ran.wrong)
        let total = ran.wrongRun.outText.split(whereSeparator: \.isNewline).last { $0.hasPrefix("frames received: ") } ?? ""
        let received = Int(total.dropFirst("frames received: ".count).prefix { $0.isNumber }) ?? 0
        print("relay --from, a recorder with a wrong key: \(total)")
        #expect(received > 200 && total.contains("opened: 0,") && wrong.feeds.allSatisfy { $0.frames.opened == 0 && ($0.written ?? 0) == 0 },
                "wrong key: \(ran.wrongRun.outText)")
        let media = try FileManager.default.contentsOfDirectory(atPath: ran.wrong.path).filter { !$0.hasSuffix(".json") }
        #expect(media.isEmpty, "files with the wrong key: \(media)")
    }

    /// The largest step between consecutive packets of `stream` in `file` (seconds).
    static func largestGap(_ file: URL, stream: String) async throws -> Double {
        let r = try await ChildProcess.run("/usr/bin/ffprobe", ["-hide_banner", "-loglevel", "error", "-select_streams", stream,
                                                                "-show_entries", "packet=pts_time", "-of", "csv=p=0", file.path])
        let times = r.outText.split(whereSeparator: \.isNewline).compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }.sorted()
        return zip(times, times.dropFirst()).map { $1 - $0 }.max() ?? 0
    }

    /// Video frames ffmpeg decodes from `file`, and its decoder's complaints.
    static func decodedFrames(_ file: URL) async throws -> (frames: Int, errors: String) {
        let r = try await ChildProcess.run("/usr/bin/ffprobe", ["-hide_banner", "-loglevel", "error", "-select_streams", "v:0", "-count_frames",
                                                                "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", file.path])
        return (Int(r.outText.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0, r.errText)
    }
}
