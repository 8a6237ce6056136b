import FrameCrypto
import Foundation
import GStreamerKit
import Logging
import Synchronization
import Locking

/// The one file a video track is written to. libwebrtc changes a sender's picture size (and so
/// its SPS/PPS, sometimes its profile) by itself when bandwidth or CPU change. The track is
/// written as `avc3` (parameter sets in band before every keyframe, `h264parse config-interval=-1`),
/// for which matroskamux takes new caps mid-file and players decode on: one file per track, each
/// change a new part (a time inside the file in the manifest). Measured on GStreamer 1.22: with
/// `avc` matroskamux refuses the change ("Caps changes are not supported by Matroska").
final class VideoFile: Sendable {
    let url: URL
    let mediaTimes = MediaTimes()
    /// The picture size being written now.
    let resolution = Resolution()
    /// Access units handed to the muxer.
    let written = Counter()
    private let bin: Bin
    private let source: Pad
    private let pipeline: Pipeline
    private let branchName: String
    private let caps = Locked<String?>(nil)
    private let parts = Parts()
    private let probes = Locked<[PadProbe]>([])
    private let log: Logger
    /// Called when the picture size changes (streaming thread).
    private let onSizeChange: @Sendable () -> Void

    /// Creates `url` (0600) and a record-video-file.pipeline bin for it on `source` (the src pad
    /// of a record-video.pipeline bin). `onFinished` runs when end-of-stream reached the file.
    init(source: Pad, url: URL, pipeline: Pipeline, library: PipelineLibrary, branchName: String, logger: Logger,
         onSizeChange: @escaping @Sendable () -> Void = {}, onFinished: @escaping @Sendable () -> Void) throws {
        self.url = url
        self.onSizeChange = onSizeChange
        self.source = source
        self.pipeline = pipeline
        self.branchName = branchName
        log = logger
        try PrivateFiles.create(url, option: "the folder")
        do {
            bin = try pipeline.addBin(description: try library.description("record-video-file", ["file": url.path]), name: "\(branchName)-file")
        } catch {
            try? FileManager.default.removeItem(at: url)
            throw error
        }
        do {
            let sink = try bin.staticPad("sink")
            let fileSink = try bin.element(named: "file").staticPad("sink")
            let bytesOut = BotMetrics.bytesWritten()
            let (written, mediaTimes, parts) = (self.written, self.mediaTimes, self.parts)
            // The file starts on an IDR (by its NAL units: FFmpeg decodes from an IDR, and
            // h264parse's delta flag was missing on a P frame after dropped ones); the gate comes
            // first so the observers see what is written.
            let attached = [
                sink.addKeyFrameStart(isKeyFrame: { VideoFrame.containsIDR($0) }),
                sink.addTimedBufferObserver { _, pts in
                    written.increment()
                    guard let pts else { return }
                    mediaTimes.mark(pts)
                    parts.list.withLock { if !$0.isEmpty { $0[$0.count - 1].add(frameAt: pts) } }
                },
                // Bytes handed to the file sink (the muxer's rewrite of a header at the end counts again).
                fileSink.addBufferObserver { bytesOut.add($0.count) },
                fileSink.onEndOfStream { onFinished() },
                sink.beforeCaps { [weak self] caps in self?.capsArrived(caps) },
            ]
            probes.withLock { $0 = attached }
            guard bin.syncStateWithParent() else { throw BotError.pipelineFailed("the file \(url.lastPathComponent) did not start") }
            try source.link(to: sink)
        } catch {
            probes.withLock { for p in $0 { p.remove() }; $0 = [] }
            pipeline.remove(bin)
            try? FileManager.default.removeItem(at: url)
            throw error
        }
    }

    /// The file's parts, one per format it was written in, in order.
    var partsWritten: [RecordingManifest.VideoPart] { parts.list.withLock { $0 } }

    /// Whether the pipeline child `name` is this file's bin.
    func owns(bin name: String) -> Bool { name == "\(branchName)-file" }

    /// Removes the bin (after end-of-stream reached it) and its probes.
    func remove() {
        probes.withLock { for p in $0 { p.remove() }; $0 = [] }
        pipeline.remove(bin)
    }

    /// Streaming thread, before the caps reach the muxer: a new part if frames were written in
    /// another format, else the first part's format.
    private func capsArrived(_ caps: String) {
        let previous = self.caps.withLock { old in defer { old = caps }; return old }
        let width = capsInt("width", in: caps), height = capsInt("height", in: caps)
        if let width, let height {
            let before = resolution.value
            resolution.set(width: width, height: height)
            if let before, before != (width, height) { onSizeChange() }
        }
        let part = RecordingManifest.VideoPart(width: width, height: height, profile: capsString("profile", in: caps))
        parts.list.withLock { parts in
            guard let previous, previous != caps, let last = parts.last, last.frames > 0 else {
                // No frame in the current part yet: it takes this format.
                if parts.isEmpty { parts.append(part) } else { parts[parts.count - 1] = part }
                return
            }
            var next = part
            next.cause = Self.describe(from: previous, to: caps)
            next.start = Date()
            log.info("\(url.lastPathComponent): \(next.cause ?? ""), written on in the same file after frame \(last.frames)")
            parts.append(next)
        }
    }

    /// Shared with the streaming thread's frame observer.
    private final class Parts: Sendable {
        let list = Locked<[RecordingManifest.VideoPart]>([])
    }

    /// What changed between two caps, for the manifest and the log.
    static func describe(from old: String, to new: String) -> String {
        let size = { (c: String) in capsInt("width", in: c).flatMap { w in capsInt("height", in: c).map { "\(w)x\($0)" } } }
        if let a = size(old), let b = size(new), a != b { return "picture size changed from \(a) to \(b)" }
        let profile = { (c: String) in capsString("profile", in: c) }
        if let a = profile(old), let b = profile(new), a != b { return "H.264 profile changed from \(a) to \(b)" }
        return "H.264 parameters (SPS/PPS) changed"
    }
}
