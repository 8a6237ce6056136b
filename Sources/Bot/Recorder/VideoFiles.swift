import FrameCrypto
import Foundation
import GStreamerKit
import Logging
import Synchronization
import Locking

/// The files one video track is written to, one after the other. Matroska cannot change a
/// track's caps, and libwebrtc changes a sender's picture size by itself when bandwidth or CPU
/// change: a caps change after frames were written closes the file and starts the next one (a
/// new segment in the manifest). It happens on the streaming thread between two frames, so no
/// frame is lost and no other feed notices.
final class VideoFiles: Sendable {
    /// Counters of the whole track at one moment, to split them between files.
    struct Mark: Sendable {
        var time: Date
        var frames: FrameStats.Snapshot
        var keyFrames: Int
        var keyFrameRequests: Int
    }

    /// One file and what went into it.
    final class File: Sendable {
        let url: URL
        let bin: Bin
        /// Why this file follows the previous one (nil for the first).
        let cause: String?
        /// The track's counters when this file started (nil for the first: all of them).
        let start: Mark?
        let end = Locked<Mark?>(nil)
        let mediaTimes = MediaTimes()
        let resolution = Resolution()
        let written = Counter()
        let caps = Locked<String?>(nil)
        let probes: Locked<[PadProbe]> = Locked([])

        init(url: URL, bin: Bin, cause: String?, start: Mark?) {
            self.url = url
            self.bin = bin
            self.cause = cause
            self.start = start
        }
    }

    private let files = Locked<[File]>([])
    private let source: Pad
    private let pipeline: Pipeline
    private let library: PipelineLibrary
    private let branchName: String
    private let nextFile: @Sendable () -> URL
    private let mark: @Sendable () -> Mark
    private let onFinished: @Sendable () -> Void
    private let onFailure: @Sendable (String, URL) -> Void
    private let log: Logger
    private let capsProbe = Locked<PadProbe?>(nil)

    /// Opens `first` on `source` (the src pad of a record-video.pipeline bin). `nextFile` names
    /// (and reserves) each later file; `onFinished` runs when the current file got end-of-stream;
    /// `onFailure` when a later file cannot be started (the track then stops being written).
    init(source: Pad, first: URL, pipeline: Pipeline, library: PipelineLibrary, branchName: String, logger: Logger,
         nextFile: @escaping @Sendable () -> URL, mark: @escaping @Sendable () -> Mark,
         onFinished: @escaping @Sendable () -> Void, onFailure: @escaping @Sendable (String, URL) -> Void) throws {
        self.source = source
        self.pipeline = pipeline
        self.library = library
        self.branchName = branchName
        self.nextFile = nextFile
        self.mark = mark
        self.onFinished = onFinished
        self.onFailure = onFailure
        log = logger
        try open(first, cause: nil, start: nil)
        capsProbe.withLock { $0 = source.beforeCaps { [weak self] caps in self?.capsArrived(caps) } }
    }

    var all: [File] { files.withLock { $0 } }
    var current: File? { files.withLock { $0.last } }

    /// Whether the pipeline child `name` is one of these files' bins.
    func owns(bin name: String) -> Bool { name.hasPrefix(branchName + "-file") }

    /// Removes the current file's bin (after end-of-stream reached it) and the caps probe.
    func remove() {
        capsProbe.withLock { $0?.remove(); $0 = nil }
        if let file = current {
            file.probes.withLock { for p in $0 { p.remove() } }
            pipeline.remove(file.bin)
        }
    }

    /// Streaming thread, before the caps go on to the current file.
    private func capsArrived(_ caps: String) {
        guard let file = current else { return }
        let previous = file.caps.withLock { old in defer { old = caps }; return old }
        // Before the first frame the muxer still takes new caps (it has not written its header).
        guard let previous, previous != caps, file.written.value > 0 else {
            if let w = capsInt("width", in: caps), let h = capsInt("height", in: caps) { file.resolution.set(width: w, height: h) }
            return
        }
        next(after: file, cause: Self.describe(from: previous, to: caps), caps: caps)
    }

    /// Closes `file` (end-of-stream: matroskamux writes its index and sizes, here on this thread)
    /// and links the source to a new file, which the caps being pushed go to.
    private func next(after file: File, cause: String, caps: String) {
        let at = mark()
        file.end.withLock { $0 = at }
        // Its end-of-stream is not the track's end.
        file.probes.withLock { for p in $0 { p.remove() }; $0 = [] }
        source.unlink()
        if let sink = try? file.bin.staticPad("sink") { sink.sendEndOfStream() }
        pipeline.remove(file.bin)
        let url = nextFile()
        do {
            try open(url, cause: cause, start: at)
            current?.caps.withLock { $0 = caps }
            if let w = capsInt("width", in: caps), let h = capsInt("height", in: caps) { current?.resolution.set(width: w, height: h) }
            log.info("\(cause): \(file.url.lastPathComponent) closed, the track goes on in \(url.lastPathComponent)")
        } catch {
            // Unlinked, the branch's errorignore turns not-linked into ok: only this track stops.
            log.error("\(cause), and no new file could be started for it (\(error)): \(file.url.lastPathComponent) keeps what was written")
            onFailure("\(cause); no new file could be started: \(error)", file.url)
        }
    }

    private func open(_ url: URL, cause: String?, start: Mark?) throws {
        let n = files.withLock { $0.count } + 1
        try PrivateFiles.create(url, option: "the folder")
        let bin: Bin
        do {
            bin = try pipeline.addBin(description: try library.description("record-video-file", ["file": url.path]), name: "\(branchName)-file\(n)")
        } catch {
            try? FileManager.default.removeItem(at: url)
            throw error
        }
        let file = File(url: url, bin: bin, cause: cause, start: start)
        do {
            let sink = try bin.staticPad("sink")
            let fileSink = try bin.element(named: "file").staticPad("sink")
            let bytesOut = BotMetrics.bytesWritten()
            let onFinished = self.onFinished
            // A file starts on a keyframe; the gate comes first so the observers see what is written.
            let probes = [
                sink.addKeyFrameStart(),
                sink.addTimedBufferObserver { _, pts in
                    file.written.increment()
                    if let pts { file.mediaTimes.mark(pts) }
                },
                // Bytes handed to the file sink (the muxer's rewrite of a header at the end counts again).
                fileSink.addBufferObserver { bytesOut.add($0.count) },
                fileSink.onEndOfStream { onFinished() },
            ]
            file.probes.withLock { $0 = probes }
            guard bin.syncStateWithParent() else { throw BotError.pipelineFailed("the file \(url.lastPathComponent) did not start") }
            try source.link(to: sink)
        } catch {
            file.probes.withLock { for p in $0 { p.remove() }; $0 = [] }
            pipeline.remove(bin)
            try? FileManager.default.removeItem(at: url)
            throw error
        }
        files.withLock { $0.append(file) }
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
