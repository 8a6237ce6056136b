import Foundation
import GStreamerKit
import Synchronization
import Locking

/// What a finished recording file holds, read back from disk: demuxed, every frame counted per
/// track as the demuxer gives it (Ogg: from its pages, `OggPackets`), audio decoded whole and
/// the first pictures of video decoded. The manifest says what
/// is on disk from this, never what the recorder believes it wrote.
struct ReadBack: Sendable {
    struct Track: Sendable {
        var frames = 0
        var decoded = 0
        var first: Double?
        var last: Double?
    }

    struct Contents: Sendable {
        var bytes: Int
        var audio: Track?
        var video: Track?
    }

    /// Pictures decoded per video track: enough to show it decodes from its first keyframe on.
    static let decodedPictures = 30

    let library: PipelineLibrary

    /// Reads `url`, which must hold the tracks named. Runs off the pool, bounded in time by the
    /// file's size; a missing track, a file that does not parse or a timeout throws.
    func read(_ url: URL, audio: Bool, video: Bool) async throws(BotError) -> Contents {
        var info = stat()
        guard lstat(url.path, &info) == 0 else { throw .output("\(url.lastPathComponent) is missing") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .output("\(url.lastPathComponent) is not a regular file") }
        let bytes = Int(info.st_size)
        guard bytes > 0 else { return Contents(bytes: 0) }
        let ogg = url.pathExtension == "opus"
        var description = try library.description(ogg ? "readback-ogg" : "readback-matroska", ["file": url.path])
        if !ogg {
            if audio { description += " " + (try library.description("readback-matroska-audio")) }
            if video { description += " " + (try library.description("readback-matroska-video")) }
        }
        let pipeline: Pipeline
        do { pipeline = try Pipeline(description: description) } catch { throw .media(error) }
        let counts = Counts()
        var probes: [PadProbe] = []
        do {
            if audio || ogg {
                probes.append(try pipeline.element(named: "aframes").staticPad("src").addTimedBufferObserver { _, pts in counts.audio(frame: pts) })
                probes.append(try pipeline.element(named: "adecoded").staticPad("sink").addBufferObserver { _ in counts.audioDecoded() })
            }
            if video && !ogg {
                probes.append(try pipeline.element(named: "vframes").staticPad("src").addTimedBufferObserver { _, pts in counts.video(frame: pts) })
                probes.append(try pipeline.element(named: "vdec").staticPad("sink").addPassLimit(Self.decodedPictures))
                probes.append(try pipeline.element(named: "vdecoded").staticPad("sink").addBufferObserver { _ in counts.videoDecoded() })
            }
        } catch { throw .media(error) }
        // A minute of video is a few MB: 10 s and one more per 20 MB is far more than it takes.
        let limit = Duration.seconds(10 + bytes / 20_000_000)
        let outcome: Result<Void, BotError> = await withTaskGroup(of: Result<Void, BotError>?.self) { group in
            group.addTask {
                do throws(GStreamerError) { try await pipeline.runToEnd(); return .success(()) } catch { return .failure(.media(error)) }
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return Task.isCancelled ? nil : .failure(.output("reading it back took more than \(limit) (a track it should hold is missing, or it does not parse)"))
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? .success(())
        }
        probes.forEach { $0.remove() }
        await OffPool.run { pipeline.setStateQuietly(.null) }
        try outcome.get()
        var c = counts.snapshot
        // Ogg: the frames are counted from its pages, not from what the demuxer let through.
        if ogg, let packets = await OffPool.run({ OggPackets.count(url) }) { c.audio.frames = packets }
        return Contents(bytes: bytes, audio: audio || ogg ? c.audio : nil, video: video && !ogg ? c.video : nil)
    }
}

/// Frames counted on the read-back pipeline's streaming threads.
private final class Counts: Sendable {
    private let state = Locked((audio: ReadBack.Track(), video: ReadBack.Track()))
    func audio(frame pts: Double?) { state.withLock { Self.mark(&$0.audio, pts) } }
    func video(frame pts: Double?) { state.withLock { Self.mark(&$0.video, pts) } }
    func audioDecoded() { state.withLock { $0.audio.decoded += 1 } }
    func videoDecoded() { state.withLock { $0.video.decoded += 1 } }
    var snapshot: (audio: ReadBack.Track, video: ReadBack.Track) { state.withLock { $0 } }

    private static func mark(_ t: inout ReadBack.Track, _ pts: Double?) {
        t.frames += 1
        if let pts {
            t.first = min(t.first ?? pts, pts)
            t.last = max(t.last ?? pts, pts)
        }
    }
}
