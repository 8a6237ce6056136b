import Foundation
import GStreamerKit
import Locking
import Logging

/// Puts each publisher's video and audio track files into `<feedId>-<userId>.mkv` once it
/// leaves (or the recording stops), if its video is in one file.
///
/// The merged file is written under a hidden name, read back, and only if it holds every frame
/// of both track files (counted, audio decoded, its first pictures decoded) is it renamed into
/// place and are the track files deleted. Otherwise the track files stay as they are and the
/// manifest says why (`not_merged`). It runs to its end whatever happens to the caller's task:
/// finishing files is the stop.
struct TrackRemux {
    let library: PipelineLibrary
    /// Where the files are reached (a held folder's `/proc/self/fd/N`).
    let directory: URL
    let logger: Logger
    /// Errors spelled with the folder's shown path (GStreamer's name the location it read).
    var show: @Sendable (String) -> String = { $0 }

    /// Returns the entries with the merged ones naming the new file.
    func merge(_ entries: [RecordingManifest.Feed]) async -> [RecordingManifest.Feed] {
        await Finishing.run { await mergeNow(entries) }
    }

    private func mergeNow(_ entries: [RecordingManifest.Feed]) async -> [RecordingManifest.Feed] {
        var out = entries
        for feed in Set(entries.map(\.feedID)) {
            let videoFiles = out.indices.filter { out[$0].feedID == feed && out[$0].file.hasSuffix(".video.mkv") }
            guard let a = out.firstIndex(where: { $0.feedID == feed && $0.file.hasSuffix(".audio.mka") }), let v = videoFiles.first else { continue }
            // Video in several files (its caps changed mid-call): one Matroska track cannot hold
            // them, so the files stay apart; the manifest's media times line them up.
            guard videoFiles.count == 1 else {
                let why = "video in \(videoFiles.count) files (its format changed mid-call): the tracks stay apart, the manifest's media times line them up"
                logger.info("feed \(feed): \(why)")
                for i in videoFiles + [a] { out[i].notMerged = why }
                continue
            }
            // A track with no frame has nothing to merge; the read-back lists it as unrecorded.
            guard out[a].written ?? 1 > 0, out[v].written ?? 1 > 0 else { continue }
            do {
                let name = try await remux(video: out[v], audio: out[a])
                out[v].file = name
                out[a].file = name
                logger.info("feed \(feed): audio and video in \(name)")
            } catch {
                let error = show("\(error)")
                logger.error("feed \(feed): the track files \(out[v].file) and \(out[a].file) were kept as they are: \(error)")
                out[v].notMerged = error
                out[a].notMerged = error
            }
        }
        return out
    }

    /// Writes, checks and renames the merged file; returns its name. Removes what it wrote if
    /// anything fails; the track files are deleted only once the merged file is in place.
    private func remux(video v: RecordingManifest.Feed, audio a: RecordingManifest.Feed) async throws(BotError) -> String {
        let name = String(v.file.dropLast(".video.mkv".count)) + ".mkv"
        let video = directory.appendingPathComponent(v.file), audio = directory.appendingPathComponent(a.file)
        let target = directory.appendingPathComponent(name)
        let partial = directory.appendingPathComponent(".\(name).partial")
        defer { unlink(partial.path) }
        let check = ReadBack(library: library)
        let inVideo = try await check.read(video, audio: false, video: true).video ?? .init()
        let inAudio = try await check.read(audio, audio: true, video: false).audio ?? .init()
        // Private before remux.pipeline's filesink opens it.
        // Off the pool: an open blocks on whatever sits at that name (a FIFO waits for a reader).
        try await OffPool.run { () throws(BotError) in try PrivateFiles.create(partial, option: "the folder") }
        let description = try library.description("remux", ["video": video.path, "audio": audio.path, "file": partial.path])
        let remux: Pipeline
        do throws(GStreamerError) {
            remux = try Pipeline(description: description)
            // Each demuxer starts its track at 0: shift each by where it started when recorded.
            let start = min(v.firstMediaTime ?? 0, a.firstMediaTime ?? 0)
            try remux.element(named: "vq").staticPad("sink").setOffset(seconds: (v.firstMediaTime ?? start) - start)
            try remux.element(named: "aq").staticPad("sink").setOffset(seconds: (a.firstMediaTime ?? start) - start)
            try await remux.runToEnd()
        } catch { throw .media(error) }
        let merged = try await check.read(partial, audio: true, video: true)
        let (mv, ma) = (merged.video ?? .init(), merged.audio ?? .init())
        guard mv.frames == inVideo.frames, ma.frames == inAudio.frames else {
            throw .output("the merged file held \(mv.frames) of \(inVideo.frames) video and \(ma.frames) of \(inAudio.frames) audio frames")
        }
        guard ma.decoded == inAudio.decoded, mv.decoded == inVideo.decoded else {
            throw .output("the merged file decoded to \(mv.decoded) pictures and \(ma.decoded) audio frames, its inputs to \(inVideo.decoded) and \(inAudio.decoded)")
        }
        // link(2) never replaces a file that appeared meanwhile; the partial name goes in `defer`.
        guard link(partial.path, target.path) == 0 else {
            throw .output("cannot put the merged file in place as \(name): \(String(cString: strerror(errno)))")
        }
        unlink(video.path)
        unlink(audio.path)
        return name
    }
}
