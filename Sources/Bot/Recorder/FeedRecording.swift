import FrameCrypto
import Foundation
import GStreamerKit
import Janus
import Logging
import Synchronization
import Locking

/// One track of one publisher being written, decrypted and not transcoded: audio to
/// `<feedId>-<userId>.opus`, video to `<feedId>-<userId>.mkv` (H.264 only; a caps change mid-call
/// goes on in the same file, see `VideoFile`). The branch after webrtcbin, its decryption,
/// counters and times.
final class FeedRecording: Sendable {
    enum Kind: String, Sendable {
        /// An audio-only publisher's audio: Ogg Opus.
        case audio
        /// The audio of a publisher with video: a Matroska track file, remuxed at the end.
        case audioTrack
        /// Video: a Matroska track file, remuxed with the audio at the end.
        case video
        var pipeline: String { ["audio": "record-audio", "audioTrack": "record-audio-track", "video": "record-video"][rawValue]! }
        var fileExtension: String { ["audio": "opus", "audioTrack": "audio.mka", "video": "video.mkv"][rawValue]! }
        var codec: String { self == .video ? "h264" : "opus" }
        var media: String { self == .video ? "video" : "audio" }
        var isAudio: Bool { self != .video }
    }

    let kind: Kind
    let feedID: Int64
    let display: String
    let mid: String
    /// The track's file.
    let file: URL
    /// The branch's name in the pipeline, which the path of its elements' errors carries.
    let branchName: String
    let stats = FrameStats()
    let times = FrameTimes()
    let keyFrames: KeyFrameRequests?
    /// Video: decrypted access units holding an IDR slice.
    let keyFramesReceived = Counter()
    /// Per-sender keys: frames opened per key index of this feed's sender.
    let keyIndexes: KeyIndexCounts?
    private let bin: Bin
    /// Audio with `--mix`: the branch feeding the call's mix.
    private let mixInput: CallMix.Input?
    private let mix: CallMix?
    /// Told when the mix lost the end of this track (a loss for the manifest's `errors`).
    private let onMixLoss: @Sendable (RecordingManifest.OutputError) -> Void
    private let logger: Logger
    /// Video: the file bin and its parts.
    private let videoFile: VideoFile?
    /// Audio: running time of the first and last frame written, in seconds.
    private let mediaTimes = MediaTimes()
    private let sinkPad: Pad
    private let probes: [PadProbe]
    private let finished: AsyncStream<Void>
    private let joinedAt = Date()
    private let leftAt = Locked<Date?>(nil)
    /// Why the file was not finished cleanly, if it was not.
    let unfinished = Locked<String?>(nil)
    /// Audio: frames handed to the file's muxer, what the file must hold when read back (video
    /// counts at its file: `VideoFile.written`).
    let written = Counter()
    /// Frames opened and dropped while the recording was paused.
    let pausedFrames = Counter()
    /// Frames as they arrived from Janus, before the depayloader (`ArrivalCounter`).
    let arrived = ArrivalCounter()

    /// Builds the branch from `record-audio.pipeline`, links `source` to it and starts it.
    /// Runs on webrtcbin's streaming thread (pad-added), so the pad is linked before data flows.
    /// `branch`: its name in the pipeline (default `feed-<feedID>-<mid>`), unique there.
    init(kind: Kind, feedID: Int64, display: String, mid: String, branch: String? = nil, file: URL, source: Pad, pipeline: Pipeline,
         library: PipelineLibrary, protection: FrameProtection, tap: FrameTap?, mix: CallMix? = nil,
         pause: PauseFlag = PauseFlag(), onKeyMissing: (@Sendable (Int64) -> Void)? = nil, keyHold: KeyHoldBounds = .none,
         askKeyFrame: @escaping @Sendable () -> Void = {}, onMixLoss: @escaping @Sendable (RecordingManifest.OutputError) -> Void = { _ in },
         logger: Logger) throws {
        self.kind = kind
        self.mix = mix
        self.onMixLoss = onMixLoss
        self.logger = logger
        self.feedID = feedID
        self.display = display
        self.mid = mid
        self.file = file
        let h264Format = protection.receivedH264Format
        let description = try library.description(kind.pipeline, ["file": file.path, "h264_stream_format": h264Format])
        // Private from the start, and a name or folder that cannot be written fails here, for
        // this feed only, before anything is linked (video: VideoFile creates its file).
        if kind.isAudio { try PrivateFiles.create(file, option: "the folder") }
        branchName = branch ?? "feed-\(feedID)-\(mid)"
        let bin: Bin
        do { bin = try pipeline.addBin(description: description, name: branchName) } catch {
            try? FileManager.default.removeItem(at: file)
            throw error
        }
        self.bin = bin
        // Whatever fails below takes the branch out again: no half-built branch, no empty file.
        var mixInput: CallMix.Input?, videoFile: VideoFile?, complete = false
        defer {
            if !complete {
                mixInput?.remove(from: pipeline)
                pipeline.remove(bin)
                videoFile?.remove()
                if kind.isAudio || videoFile != nil { try? FileManager.default.removeItem(at: file) }
            }
        }
        let (finished, done) = AsyncStream.makeStream(of: Void.self)
        self.finished = finished
        let open = try bin.element(named: "open").staticPad("src")
        let stats = self.stats, times = self.times
        let keyFrames = kind == .video ? KeyFrameRequests(ask: askKeyFrame) : nil
        self.keyFrames = keyFrames
        let keyFramesReceived = self.keyFramesReceived
        // Per-sender keys: this feed's sender is looked up once, here, not per frame.
        let keyIndexes: KeyIndexCounts? = switch protection {
        case .perSender(let map): KeyIndexCounts(map.keys(display: display, feedID: feedID))
        case .indexed: KeyIndexCounts()
        case .e2ee, .none: nil
        }
        self.keyIndexes = keyIndexes
        if kind == .video {
            // A new picture size asks for a keyframe too: if the sender's one at the change was
            // lost, the pictures after it cannot be decoded until the next.
            videoFile = try VideoFile(source: try bin.staticPad("src"), url: file, pipeline: pipeline, library: library,
                                      branchName: branchName, logger: logger, onSizeChange: { keyFrames?.request() },
                                      onFinished: { done.yield(); done.finish() })
        }
        self.videoFile = videoFile
        // Set by a frame that could not be opened; the next one that opens, unless a keyframe,
        // refers to pictures the file lacks: ask for a keyframe then. Not on the drop itself: a
        // wrong or missing key drops every frame, and a keyframe a second would not help.
        let droppedSinceOpen = Atomic<Bool>(false)
        let openSink = try bin.element(named: "open").staticPad("sink")
        // The manifest's first frame is when it arrived, not when a lip-sync hold let it go.
        openSink.onFirstBufferAge { times.firstFrameWaited($0) }
        var keyMissing: (@Sendable () -> Void)?
        if let onKeyMissing { keyMissing = { onKeyMissing(feedID) } }
        let settled: @Sendable (Int, Int) -> Void = { [file] opened, dropped in
            logger.info("\(file.lastPathComponent): \(opened + dropped) frame(s) held while their key was on its way: \(opened) opened, \(dropped) dropped")
        }
        var probes = [
            kind.isAudio ? open.attachRecordingReceiver(protection, AudioFormat.self, sink: openSink, hold: keyHold, stats: stats, times: times,
                                                        display: display, feedID: feedID, openedBy: keyIndexes, onKeyMissing: keyMissing, onSettled: settled)
                         : open.attachRecordingReceiver(protection, VideoFormat.self, sink: openSink, hold: keyHold, stats: stats, times: times,
                                                        display: display, feedID: feedID, openedBy: keyIndexes, onKeyMissing: keyMissing,
                                                        onDrop: { _ in droppedSinceOpen.store(true, ordering: .relaxed) }, onSettled: settled),
        ]
        // After the opening, before the file and the mix: a paused recording counts and drops.
        let pausedFrames = self.pausedFrames
        probes.append(open.addPauseGate(pause, keyFrames: kind == .video, onDrop: { pausedFrames.increment() },
                                        onWaitingForKey: { keyFrames?.request() }))
        if kind.isAudio {
            let fileSink = try bin.element(named: "file").staticPad("sink")
            probes.append(fileSink.onEndOfStream { done.yield(); done.finish() })
            // Bytes handed to the file sink (the muxer's rewrite of a header at the end counts again).
            let bytesOut = BotMetrics.bytesWritten()
            probes.append(fileSink.addBufferObserver { bytesOut.add($0.count) })
            let mediaTimes = self.mediaTimes
            probes.append(open.addTimedBufferObserver { _, pts in if let pts { mediaTimes.mark(pts) } })
            let written = self.written
            probes.append(try bin.element(named: "parse").staticPad("src").addBufferObserver { _ in written.increment() })
        } else {
            let counter = keyFramesReceived
            probes.append(open.addBufferObserver { au in
                let key = h264Format == "avc" ? VideoFrame.containsIDR(au) : AnnexB.containsIDR(au)
                if key { counter.increment() }
                if droppedSinceOpen.exchange(false, ordering: .relaxed), !key { keyFrames?.request() }
            })
            // After a gap in the stream (lost packets, a network outage the PeerConnection rode
            // out) the next pictures refer to ones never received: ask for a keyframe at once.
            let lastRTP = Atomic<Int64>(0)
            probes.append(try bin.staticPad("sink").addBufferObserver { _ in
                let now = Int64(Date().timeIntervalSince1970 * 1000)
                let previous = lastRTP.exchange(now, ordering: .relaxed)
                if previous != 0, now - previous >= 1000 { keyFrames?.request() }
            })
            // Ask again (at most once a second) while RTP arrives and no keyframe has: the request
            // made when the feed is added can reach the sender before its media path is up. On RTP,
            // because the avc depayloader outputs nothing before the first SPS/PPS. A keyframe that
            // arrived and could not be opened (a wrong key: NAL headers stay clear) ends it too:
            // more would only make the sender send keyframes every second.
            let keyFramesArrived = Counter()
            probes.append(try bin.element(named: "open").staticPad("sink").addBufferObserver { au in
                guard h264Format == "avc" ? VideoFrame.containsIDR(au) : AnnexB.containsIDR(au) else { return }
                if keyFramesArrived.value == 0 { keyFramesArrived.increment() }
                keyFrames?.keyFrameArrived()
            })
            probes.append(try bin.staticPad("sink").addBufferObserver { _ in
                if counter.value == 0, keyFramesArrived.value == 0 { keyFrames?.request() }
            })
            // Every keyframe request from inside the branch (the depayloader's after a packet
            // loss, `request-keyframe=true`) goes to Janus by signalling, never as RTCP (see
            // `VideoRoom.requestKeyFrame`: Janus would drop it or ask another publisher).
            probes.append(try bin.staticPad("sink").onKeyUnitRequest(drop: true) { keyFrames?.request() })
        }
        let arrived = self.arrived
        probes.append(try bin.staticPad("sink").addBufferObserver { arrived.observe($0) })
        if let tap {
            probes.append(try bin.element(named: "open").staticPad("sink").addBufferObserver { tap(.beforeOpen, feedID, $0) })
            probes.append(open.addBufferObserver { tap(.afterOpen, feedID, $0) })
        }
        self.probes = probes
        // A mix that failed is not fed any more; the recording goes on without it.
        mixInput = kind.isAudio && mix?.hasFailed == false ? try mix?.add(from: bin, in: pipeline) : nil
        self.mixInput = mixInput
        sinkPad = try bin.staticPad("sink")
        // A branch that cannot start would refuse data (flushing) and stall every feed.
        guard bin.syncStateWithParent() else { throw BotError.pipelineFailed("the recording branch for \(file.lastPathComponent) did not start") }
        try source.link(to: sinkPad)
        complete = true
        // Start the file on a keyframe rather than wait for the sender's next one.
        keyFrames?.request()
    }

    /// Finishes the file: end-of-stream through the branch (oggmux writes its last page), then
    /// the branch is stopped and removed. The caller first cut the branch off webrtcbin.
    /// Never cut short by the caller's cancellation (`Finishing`): a stop is what finishes files.
    /// A file that got no end-of-stream within `timeout` is said so in the log and the manifest.
    func finish(in pipeline: Pipeline, timeout: Duration = .seconds(5)) async {
        leftAt.withLock { $0 = $0 ?? Date() }
        let ended = await Finishing.run { [self] in
            sinkPad.sendEndOfStream()
            let ended = await withTaskGroup(of: Bool.self) { group in
                group.addTask { for await _ in self.finished { return true }; return true }
                group.addTask { try? await Task.sleep(for: timeout); return false }
                let first = await group.next() ?? false
                group.cancelAll()
                return first
            }
            if let mixInput, let mix { await mixDrained(mixInput, of: mix, timeout: timeout) }
            await OffPool.run { [self] in
                mixInput?.remove(from: pipeline)
                pipeline.remove(bin)
                videoFile?.remove()
            }
            return ended
        }
        if !ended { unfinished.withLock { $0 = "its end-of-stream did not reach the file within \(timeout): the muxer may not have written its last frames" } }
    }

    /// Waits for the mix to take in the track's end: what its pad still holds is lost with it.
    /// Not in time is a loss, counted and said once; not for a mix that failed (said already).
    private func mixDrained(_ input: CallMix.Input, of mix: CallMix, timeout: Duration) async {
        let failedBefore = mix.hasFailed
        let drained = failedBefore ? true : await input.drained(timeout: timeout)
        // What the mixer dropped as late (its QoS messages, counted by the bus loop).
        let late = mix.lateMilliseconds(of: input)
        if late > 0, !mix.hasFailed {
            let text = "the call's mix \(mix.file.shown.lastPathComponent) dropped \(late) ms of feed \(feedID)'s audio (\(file.lastPathComponent)) "
                + "that came later than its delay (\(mix.delay)): the machine may be short of CPU"
            logger.error("\(text)", metadata: ["janus.feed": "\(feedID)"])
            BotMetrics.recordingLoss()
            onMixLoss(.init(time: Date(), feedID: feedID, display: display, mid: mid, kind: kind.media, file: mix.file.shown.path, error: text))
        }
        guard !drained, !mix.hasFailed else { return }
        let text = "the call's mix \(mix.file.shown.lastPathComponent) did not take in the end of feed \(feedID)'s audio "
            + "(\(file.lastPathComponent)) within \(timeout): it may lack up to the last \(mix.delay) of that audio"
        logger.error("\(text)", metadata: ["janus.feed": "\(feedID)"])
        BotMetrics.recordingLoss()
        onMixLoss(.init(time: Date(), feedID: feedID, display: display, mid: mid, kind: kind.media, file: mix.file.shown.path, error: text))
    }

    /// Whether the pipeline child `name` belongs to this track (its branch or one of its files).
    func owns(bin name: String) -> Bool { name == branchName || videoFile?.owns(bin: name) == true }

    /// The track's manifest entry.
    var entry: RecordingManifest.Feed {
        let (userID, name) = RecordingManifest.splitDisplay(display)
        let parts = videoFile?.partsWritten
        return RecordingManifest.Feed(
            feedID: feedID, display: display, userID: userID, displayName: name, mid: mid, kind: kind.media, codec: kind.codec,
            file: file.lastPathComponent, joined: joinedAt, left: leftAt.withLock { $0 },
            firstFrame: times.firstDate, lastFrame: times.lastDate, frames: stats.snapshot,
            keyFrameRequests: keyFrames?.sent, keyFrames: videoFile == nil ? nil : keyFramesReceived.value,
            width: videoFile?.resolution.value?.width, height: videoFile?.resolution.value?.height,
            firstMediaTime: (videoFile?.mediaTimes ?? mediaTimes).first, lastMediaTime: (videoFile?.mediaTimes ?? mediaTimes).last,
            error: unfinished.withLock { $0 }, parts: parts,
            openedByKeyIndex: keyIndexes?.snapshot, written: videoFile?.written.value ?? written.value,
            pausedFrames: pausedFrames.value > 0 ? pausedFrames.value : nil, arrived: arrived.value)
    }
}
