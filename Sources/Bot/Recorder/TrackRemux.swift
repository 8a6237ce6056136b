import Foundation
import GStreamerKit
import Logging

/// Puts each publisher's video and audio track files into `<feedId>-<userId>.mkv` once it
/// leaves (or the recording stops), if its video is in one file.
struct TrackRemux {
    let library: PipelineLibrary
    let directory: URL
    let logger: Logger

    /// Returns the entries with the merged ones naming the new file. If remuxing fails the
    /// track files stay as they are.
    func merge(_ entries: [RecordingManifest.Feed]) async -> [RecordingManifest.Feed] {
        var out = entries
        for feed in Set(entries.map(\.feedID)) {
            // Video in several files (its caps changed mid-call): one Matroska track cannot hold
            // them, so the files stay apart; the manifest's media times line them up.
            let videoFiles = out.filter { $0.feedID == feed && $0.file.hasSuffix(".video.mkv") }
            guard videoFiles.count <= 1 else {
                logger.info("feed \(feed): video in \(videoFiles.count) files (its format changed mid-call), audio apart; the manifest's media times line them up")
                continue
            }
            guard let v = out.firstIndex(where: { $0.feedID == feed && $0.file.hasSuffix(".video.mkv") }),
                  let a = out.firstIndex(where: { $0.feedID == feed && $0.file.hasSuffix(".audio.mka") }) else { continue }
            let name = String(out[v].file.dropLast(".video.mkv".count)) + ".mkv"
            let video = directory.appendingPathComponent(out[v].file), audio = directory.appendingPathComponent(out[a].file)
            do {
                // Private before remux.pipeline's filesink opens it.
                try PrivateFiles.create(directory.appendingPathComponent(name), option: "the folder")
                let description = try library.description("remux", [
                    "video": video.path, "audio": audio.path, "file": directory.appendingPathComponent(name).path,
                ])
                let remux = try Pipeline(description: description)
                // Each demuxer starts its track at 0: shift each by where it started when recorded.
                let start = min(out[v].firstMediaTime ?? 0, out[a].firstMediaTime ?? 0)
                try remux.element(named: "vq").staticPad("sink").setOffset(seconds: (out[v].firstMediaTime ?? start) - start)
                try remux.element(named: "aq").staticPad("sink").setOffset(seconds: (out[a].firstMediaTime ?? start) - start)
                try await remux.runToEnd()
                try? FileManager.default.removeItem(at: video)
                try? FileManager.default.removeItem(at: audio)
                out[v].file = name
                out[a].file = name
                logger.info("feed \(feed): audio and video in \(name)")
            } catch {
                try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
                logger.error("could not put feed \(feed)'s tracks into one file, kept them apart: \(error)")
            }
        }
        return out
    }
}
