import FrameCrypto
import Foundation
import GStreamerKit
import Testing
@testable import Bot
import TestSupport

/// Issue 16: one feed's name, branch or output failing never stops the others; outputs are
/// checked before joining; what a recording writes is private.
extension MediaScene {
@Suite struct RecordingHardeningTests {
    struct Publisher {
        var after: Double
        var display: String
        var source: Player.Source
        var seconds: Double? = nil
    }

    /// Starts a recorder, then each publisher `after` seconds after it; stops the recorder (as
    /// Ctrl-C would) 1.5 s after the last one has left.
    func record(out: URL, mix: URL? = nil, pipelines: URL? = nil, ring: KeyRing, _ publishers: [Publisher]) async throws
        -> (RecordingManifest, [Player.Report]) {
        let room = try await Scene.createRoom()
        var config = try Scene.config(room: room, display: "9:Rec", protection: .e2ee(ring))
        if let pipelines { config.pipelines = try PipelineLibrary(directory: pipelines.path) }
        let recording = Task { [config] in try await Recorder(config: config, directory: out, mixFile: mix).run() }
        try await Task.sleep(for: .seconds(1))
        let reports = try await withThrowingTaskGroup(of: Player.Report.self) { group in
            for p in publishers {
                let config = try Scene.config(room: room, display: p.display, protection: .e2ee(ring))
                group.addTask {
                    try await Task.sleep(for: .seconds(p.after))
                    return try await Player(config: config, source: p.source, duration: p.seconds.map { .seconds($0) }).run()
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        try await Task.sleep(for: .seconds(1.5))
        recording.cancel()
        return (try await recording.value, reports)
    }

    /// Seconds of audio in a recorded file and its dominant frequency.
    func heard(_ file: URL) async throws -> (seconds: Double, frequency: Double) {
        let samples = try await Audio.decode(file)
        return (Double(samples.count) / 48000, Audio.dominantFrequency(samples) ?? 0)
    }

    @Test func aNameOfSixtyFourFourByteCharactersIsRecordedBesideTheOthers() async throws {
        let dir = try Scene.tempDirectory("longname")
        let low = try await Audio.tone(440, seconds: 5, in: dir), high = try await Audio.tone(1000, seconds: 4, in: dir)
        let name = String(repeating: "\u{1D538}", count: 64)
        let out = dir.appendingPathComponent("rec")
        let (manifest, reports) = try await record(out: out, ring: KeyRing(current: .random()), [
            Publisher(after: 0, display: name, source: .file(low.path)),
            Publisher(after: 1, display: "2:Other", source: .file(high.path)),
        ])

        #expect(manifest.feeds.count == 2, "both publishers recorded: \(manifest.feeds.map(\.file))")
        for (feed, tone) in [(manifest.feeds.first { $0.display == name }, 440.0), (manifest.feeds.first { $0.userID == "2" }, 1000.0)] {
            let feed = try #require(feed)
            #expect(reports.contains { $0.publisherID == feed.feedID })
            #expect(feed.file.utf8.count <= 255 && feed.file.hasPrefix("\(feed.feedID)-"), "\(feed.file)")
            let (seconds, f) = try await heard(out.appendingPathComponent(feed.file))
            #expect(seconds >= 3, "\(feed.file): \(seconds) s")
            #expect(abs(f - tone) <= tone * 0.02, "\(feed.file): \(f) Hz")
        }
        let long = try #require(manifest.feeds.first { $0.display == name })
        #expect(long.file.contains("\u{1D538}"), "the name is truncated, not dropped: \(long.file)")
        #expect(manifest.errors.isEmpty, "\(manifest.errors.map(\.error))")
    }

    /// A copy of the pipelines whose audio branch fails (as a full disk or bad caps would) at
    /// its 100th frame.
    func pipelinesFailingAudio(in dir: URL) throws -> URL {
        let pipelines = dir.appendingPathComponent("pipelines")
        try FileManager.default.copyItem(at: try PipelineLibrary().directory, to: pipelines)
        let branch = pipelines.appendingPathComponent("record-audio.pipeline")
        let text = try String(contentsOf: branch, encoding: .utf8)
        try text.replacingOccurrences(of: "! tee name=split", with: "! identity error-after=100 ! tee name=split")
            .write(to: branch, atomically: true, encoding: .utf8)
        return pipelines
    }

    /// Issue 13, bug 1, and issue 30: libwebrtc changes a sender's picture size mid-call by
    /// itself. The track goes on in the same file (avc3: parameter sets in band), which an
    /// independent player (FFmpeg's ffprobe) decodes whole at both sizes, with the audio in it;
    /// the manifest gives the change as a time inside the file, and no other feed notices.
    @Test func aPictureSizeChangeGoesOnInTheSameFileAndNoOtherFeedNotices() async throws {
        let dir = try Scene.tempDirectory("resize")
        // 3 s at 640x360, then 3 s at 320x180, in one stream (MPEG-TS carries the new SPS in
        // band), constrained baseline: sent as it is, so the room sees the change mid-call.
        let clip = dir.appendingPathComponent("resize.ts")
        try await runToEnd("""
            concat name=vc ! h264parse ! queue ! mpegtsmux name=m ! filesink location="\(clip.path)" \
            videotestsrc num-buffers=45 ! video/x-raw,width=640,height=360,framerate=15/1 ! x264enc key-int-max=15 bframes=0 ! video/x-h264,profile=constrained-baseline ! vc. \
            videotestsrc num-buffers=45 ! video/x-raw,width=320,height=180,framerate=15/1 ! x264enc key-int-max=15 bframes=0 ! video/x-h264,profile=constrained-baseline ! vc. \
            audiotestsrc num-buffers=282 ! audio/x-raw,rate=48000 ! avenc_aac ! queue ! m.
            """)
        let tone = try await Audio.tone(1000, seconds: 6, in: dir)
        let out = dir.appendingPathComponent("rec")
        let (manifest, _) = try await record(out: out, ring: KeyRing(current: .random()), [
            Publisher(after: 0, display: "3:Resizer", source: .file(clip.path)),
            Publisher(after: 0, display: "4:Other", source: .file(tone.path)),
        ])

        #expect(manifest.errors.isEmpty, "\(manifest.errors)")
        let mine = manifest.feeds.filter { $0.userID == "3" }
        let video = try #require(mine.first { $0.kind == "video" }, "\(manifest.feeds.map(\.file))")
        let audio = try #require(mine.first { $0.kind == "audio" })
        #expect(mine.count == 2 && video.file == audio.file && video.file.hasSuffix(".mkv") && video.notMerged == nil,
                "one file with both tracks: \(mine.map(\.file)) \(mine.map(\.notMerged))")
        let parts = video.parts ?? []
        try #require(parts.count == 2, "\(parts)")
        #expect(parts[0].width == 640 && parts[0].height == 360 && parts[0].cause == nil)
        #expect(parts[1].width == 320 && parts[1].height == 180 && parts[1].cause == "picture size changed from 640x360 to 320x180",
                "\(parts[1])")
        #expect(parts[0].frames + parts[1].frames == video.written && parts[1].frames >= 43, "\(parts.map(\.frames)) of \(video.written ?? -1)")
        // The parts follow each other on the media clock, without a gap.
        #expect(try #require(parts[1].mediaStart) - (try #require(parts[0].mediaEnd)) < 0.2)

        // FFmpeg decodes every picture written, at the size the manifest says, in that order.
        let file = out.appendingPathComponent(video.file)
        let runs = try await Pictures.runs(file)
        #expect(runs == parts.map { Pictures.Run(width: $0.width ?? 0, height: $0.height ?? 0, count: $0.frames) }, "ffprobe: \(runs), manifest: \(parts)")
        // GStreamer's playbin plays it to its end, every picture.
        #expect(try await Pictures.playedByPlaybin(file) == video.written)
        // Audio in sync at both ends: the tracks start and end together on the media clock.
        let (v0, v1) = (try #require(video.firstMediaTime), try #require(video.lastMediaTime))
        let (a0, a1) = (try #require(audio.firstMediaTime), try #require(audio.lastMediaTime))
        #expect(abs(v0 - a0) < 0.5 && abs(v1 - a1) < 0.5, "video \(v0)…\(v1), audio \(a0)…\(a1)")
        let resizer = try #require(manifest.participants.first { $0.userID == "3" })
        #expect(resizer.gaps.isEmpty, "\(resizer.gaps)")

        // Both publishers' audio went on to the end: ~6 s each, their own sound.
        for user in ["3", "4"] {
            let audio = try #require(manifest.feeds.first { $0.kind == "audio" && $0.userID == user })
            let heard = try await heard(out.appendingPathComponent(audio.file))
            #expect(heard.seconds >= 5, "user \(user): \(heard.seconds) s")
            if user == "4" { #expect(abs(heard.frequency - 1000) < 20) }
        }
    }

    @Test func aBranchFailingMidCallStopsOnlyItsOwnFeed() async throws {
        let dir = try Scene.tempDirectory("branchfail")
        // The first publisher's branch fails after 2 s; the second joins after that and sends
        // 75 frames, fewer than the 100 its own branch would fail at.
        let long = try await Audio.tone(440, seconds: 6, in: dir), short = try await Audio.tone(1000, seconds: 1.5, in: dir)
        let out = dir.appendingPathComponent("rec")
        let (manifest, _) = try await record(out: out, pipelines: try pipelinesFailingAudio(in: dir), ring: KeyRing(current: .random()), [
            Publisher(after: 0, display: "1:Fails", source: .file(long.path)),
            Publisher(after: 3.5, display: "2:Later", source: .file(short.path)),
        ])

        let failed = try #require(manifest.feeds.first { $0.userID == "1" })
        let later = try #require(manifest.feeds.first { $0.userID == "2" }, "the later publisher is recorded")
        #expect(later.frames.opened >= 40, "\(later.frames)")
        let (seconds, f) = try await heard(out.appendingPathComponent(later.file))
        #expect(seconds >= 0.8 && abs(f - 1000) <= 20, "\(seconds) s at \(f) Hz")
        // What the failed branch wrote before it failed is kept.
        let (kept, keptF) = try await heard(out.appendingPathComponent(failed.file))
        #expect(kept >= 1 && abs(keptF - 440) <= 9, "\(kept) s at \(keptF) Hz kept")
        // Counted in the manifest, against the feed that failed.
        #expect(failed.error != nil && later.error == nil)
        #expect(manifest.errors.count == 1 && manifest.errors.first?.feedID == failed.feedID && manifest.errors.first?.file == failed.file,
                "\(manifest.errors)")
    }

    @Test func aMixThatCannotBeWrittenMidCallKeepsEveryPublishersOwnFile() async throws {
        let dir = try Scene.tempDirectory("mixfull")
        let low = try await Audio.tone(440, seconds: 4, in: dir), high = try await Audio.tone(1000, seconds: 3, in: dir)
        let out = dir.appendingPathComponent("rec")
        // Writing to /dev/full fails with "no space left on device" from the first page on.
        let (manifest, _) = try await record(out: out, mix: URL(fileURLWithPath: "/dev/full"), ring: KeyRing(current: .random()), [
            Publisher(after: 0, display: "1:Low", source: .file(low.path)),
            Publisher(after: 1.5, display: "2:High", source: .file(high.path)),
        ])

        #expect(manifest.feeds.count == 2)
        for (user, tone, length) in [("1", 440.0, 4.0), ("2", 1000.0, 3.0)] {
            let feed = try #require(manifest.feeds.first { $0.userID == user })
            let (seconds, f) = try await heard(out.appendingPathComponent(feed.file))
            #expect(seconds >= 0.75 * length && abs(f - tone) <= tone * 0.02, "\(feed.file): \(seconds) s at \(f) Hz")
        }
        #expect(manifest.errors.count == 1 && manifest.errors.first?.feedID == nil && manifest.errors.first?.file == "/dev/full",
                "the mix's failure is counted: \(manifest.errors)")
    }

    @Test func everythingARecordingWritesIsPrivate() async throws {
        let dir = try Scene.tempDirectory("modes")
        let tone = try await Audio.tone(440, seconds: 3, in: dir)
        // Folders the recorder creates itself, and a mix beside them.
        let top = dir.appendingPathComponent("calls"), out = top.appendingPathComponent("today")
        let mix = dir.appendingPathComponent("mix.opus")
        let (manifest, _) = try await record(out: out, mix: mix, ring: KeyRing(current: .random()), [
            Publisher(after: 0, display: "1:Voice", source: .file(tone.path)),
            Publisher(after: 0, display: "2:Camera", source: .testPattern, seconds: 3),
        ])
        #expect(manifest.feeds.contains { $0.file.hasSuffix(".opus") } && manifest.feeds.contains { $0.file.hasSuffix(".mkv") })

        func mode(_ url: URL) throws -> Int {
            (try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int ?? -1) & 0o777
        }
        #expect(try mode(top) == 0o700 && mode(out) == 0o700, "folders the recorder created")
        #expect(try mode(mix) == 0o600, "the mix")
        let written = try FileManager.default.contentsOfDirectory(atPath: out.path)
        #expect(written.contains("manifest.json") && written.count >= 3, "\(written)")
        for name in written {
            let m = try mode(out.appendingPathComponent(name))
            #expect(m == 0o600, "\(name): \(String(m, radix: 8))")
        }
    }

    // MARK: - Outputs checked before joining (the sfubot executable)

    /// `sfubot record` against an address where nothing listens: only the output checks can end
    /// it before it tries to connect.
    func recordWithoutJanus(_ args: [String]) async throws -> CLITests.Run {
        try await CLITests.run(["record", "--janus", "ws://127.0.0.1:9", "--room", "1", "--key-hex", String(repeating: "ab", count: 32)] + args)
    }

    @Test func anOutputFolderThatCannotBeWrittenIsReportedBeforeJoining() async throws {
        // An existing folder nobody can create files in, root included.
        let r = try await recordWithoutJanus(["--out", "/proc"])
        #expect(r.status == 73, "cannot write output: \(r.err)")
        #expect(r.err.contains("/proc") && r.err.split(separator: "\n").count == 1, "\(r.err)")
    }

    @Test func aMixThatCannotBeWrittenIsReportedBeforeJoining() async throws {
        let dir = try Scene.tempDirectory("mixcheck")
        let r = try await recordWithoutJanus(["--out", dir.appendingPathComponent("rec").path, "--mix", "/proc/mix.opus"])
        #expect(r.status == 73, "cannot write output: \(r.err)")
        #expect(r.err.contains("/proc/mix.opus") && r.err.split(separator: "\n").count == 1, "\(r.err)")
    }
}
}

/// File names from display names, and which branch an error came from: no I/O.
@Suite struct RecordingNameTests {
    @Test func namesAreCutToAByteLimitOnCharacterBoundaries() {
        let long = FeedBranches.safe(String(repeating: "\u{1D538}", count: 64))
        #expect(long.utf8.count <= FeedBranches.nameBytes && long == String(repeating: "\u{1D538}", count: FeedBranches.nameBytes / 4))
        // "é" as e + a combining accent (3 bytes): never cut between the two.
        let accented = FeedBranches.safe(String(repeating: "e\u{301}", count: 40))
        #expect(accented.utf8.count <= FeedBranches.nameBytes && accented.unicodeScalars.count % 2 == 0)
        #expect(accented.unicodeScalars.last == "\u{301}")
        #expect(FeedBranches.safe("../../etc/passwd") == "______etc_passwd")
        #expect(FeedBranches.safe("") == "unknown")
    }

    @Test func anErrorsBranchIsReadFromItsElementPath() {
        let debug = "../plugins/elements/gstfilesink.c(703): gst_file_sink_render (): /GstPipeline:pipeline0/GstBin:feed-12-3/GstFileSink:file:\nsystem error: No space left on device"
        #expect(RoomRecording.branch(inPath: debug) == "feed-12-3")
        #expect(RoomRecording.branch(inPath: "x.c(1): f (): /GstPipeline:pipeline0/GstBin:mix") == "mix")
        #expect(RoomRecording.branch(inPath: "x.c(1): f (): /GstPipeline:pipeline0/GstBin:feed-1-0-mix2:\nreason") == "feed-1-0-mix2")
        #expect(RoomRecording.branch(inPath: "no path here") == nil)
        #expect(CallMix.owns(branch: "mix") && CallMix.owns(branch: "feed-1-0-mix2") && !CallMix.owns(branch: "feed-1-0"))
    }
}
