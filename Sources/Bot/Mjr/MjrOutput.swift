import Foundation
import GStreamerKit
import Mjr

/// Writes the kept frames of one publisher's tracks into one file through a pipelines/mjr-*
/// description: appsrc → parser → muxer → filesink. Frames go in time order across tracks,
/// so a blocked appsrc never waits on a muxer that waits on the other track.
enum MjrOutput {
    /// `tracks`: at most one audio and one video, each with frames.
    static func write(_ tracks: [MjrTrack], to file: URL, library: PipelineLibrary) async throws(BotError) {
        let audio = tracks.first { $0.file.kind == .audio }, video = tracks.first { $0.file.kind == .video }
        let name = audio != nil && video != nil ? "mjr-av" : video != nil ? "mjr-video" : "mjr-audio"
        // Private before filesink opens it (it would keep the umask's mode).
        try PrivateFiles.create(file, option: "--out")
        let pipeline: Pipeline
        let sources: [(AppSource, MjrTrack)]
        do {
            pipeline = try Pipeline(description: try library.description(name, ["file": file.path]))
            sources = try [(audio, "audio"), (video, "video")].compactMap { (track, element) throws(GStreamerError) in
                guard let track else { return nil }
                return (try AppSource(named: element, in: pipeline), track)
            }
        } catch let e as BotError {
            throw e
        } catch {
            throw .init(error)
        }
        let messages = pipeline.bus.messages()
        do { try pipeline.setState(.playing) } catch { throw .media(error) }
        let pusher = Task.detached { push(sources) }
        var failure: String? = nil
        for await m in messages {
            if case .endOfStream = m { break }
            if case .error(let source, let message, _) = m {
                failure = "\(source): \(message)"
                break
            }
        }
        // NULL flushes the appsrcs, so a pusher blocked on a full queue returns.
        pipeline.setStateQuietly(.null)
        await pusher.value
        if let failure { throw .pipelineFailed(failure) }
    }

    /// Pushes every frame of every source, merged by time, then ends each stream.
    private static func push(_ sources: [(AppSource, MjrTrack)]) {
        var next = [Int](repeating: 0, count: sources.count)
        while true {
            var pick: Int? = nil
            for (k, (_, track)) in sources.enumerated() where next[k] < track.frames.count {
                if pick == nil || track.frames[next[k]].pts < sources[pick!].1.frames[next[pick!]].pts { pick = k }
            }
            guard let k = pick else { break }
            let (source, track) = sources[k]
            let frame = track.frames[next[k]]
            next[k] += 1
            let ok = track.bytes.withUnsafeBytes { source.push(UnsafeRawBufferPointer(rebasing: $0[frame.range]), pts: frame.pts, delta: !frame.keyframe) }
            guard ok else { return }  // flushing: the pipeline stopped (an error)
        }
        for (source, _) in sources { source.endOfStream() }
    }
}
