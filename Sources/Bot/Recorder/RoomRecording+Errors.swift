import Foundation
import GStreamerKit
import Logging

/// One output failing: a feed's branch or the mix stops, the rest of the call goes on.
extension RoomRecording {
    /// A pipeline error: if it comes from one feed's branch, that branch is taken out and the
    /// others go on; if from the mix, the recordings stop feeding it. Logged once per branch,
    /// and counted in the manifest.
    func mediaError(source: String, text said: String, debug saidDebug: String?) async {
        // The sinks' errors name the paths they write, which people see as the folder's own.
        let text = showing(said), debug = saidDebug.map(showing)
        let branch = debug.flatMap(Self.branch(inPath:))
        guard let branch, let media else {
            log.error("pipeline error from \(source): \(text)", metadata: ["gst.debug": "\(debug ?? "")"])
            return
        }
        guard !failedBranches.contains(branch) else {
            log.debug("again from \(branch): \(text)")
            return
        }
        let full = DiskSpace.isFull(text: text, debug: debug)
        if CallMix.owns(branch: branch), let mix = media.mix {
            failedBranches.insert(branch)
            guard branch == CallMix.branchName else {
                // One input's decoder: that publisher is no longer heard in the mix.
                log.error("\(branch) no longer feeds the call's mix (\(text)); the mix and the recordings go on")
                branches.note(.init(time: Date(), file: mix.file.shown.path, error: "\(branch): \(text)"))
                return
            }
            guard mix.markFailed() else { return }
            if full {
                log.error("the call's mix \(mix.file.shown.path) stopped (the disk is full): it keeps what was written, and is not written again in this recording")
            } else {
                log.error("the call's mix \(mix.file.shown.path) stopped (\(text)): it keeps what was written; every publisher's own file goes on",
                          metadata: ["gst.debug": "\(debug ?? "")"])
            }
            BotMetrics.recordingLoss()
            branches.note(.init(time: Date(), file: mix.file.shown.path, error: text))
            writeManifest()
            return
        }
        guard let recording = branches.fail(bin: branch) else {
            log.error("pipeline error from \(source): \(text)", metadata: ["gst.debug": "\(debug ?? "")"])
            return
        }
        failedBranches.insert(branch)
        if full {
            noteDiskFull()
            // The failing child may be one of the track's file bins: both names, so the track's
            // branch gets a new one and the new bins' errors are heard again.
            fullBranches.formUnion([branch, recording.branchName])
        }
        BotMetrics.recordingLoss()
        let file = recording.file.lastPathComponent
        // A full disk was said once for every track (noteDiskFull).
        log.log(level: full ? .debug : .error,
                "feed \(recording.feedID) \(recording.kind.media) stopped being recorded (\(text)); \(file) keeps what was written, the other feeds go on",
                metadata: ["janus.feed": "\(recording.feedID)", "gst.debug": "\(debug ?? "")"])
        branches.note(.init(time: Date(), feedID: recording.feedID, display: recording.display, mid: recording.mid,
                            kind: recording.kind.media, file: file, error: text))
        // A short wait: end-of-stream lets the muxer close the file if the failure was upstream of it.
        await recording.finish(in: media.pipeline, timeout: .milliseconds(500))
        var entry = recording.entry
        entry.error = text
        finished.append(entry)
        if state == .recording { writeManifest() }
    }

    /// The pipeline child an error came from, read from the element path GStreamer puts in an
    /// error's debug text (`…: /GstPipeline:pipeline0/GstBin:feed-1-0/GstFileSink:file:…`).
    static func branch(inPath debug: String) -> String? {
        guard let start = debug.range(of: "/GstPipeline:") else { return nil }
        let parts = debug[start.upperBound...].split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, let colon = parts[1].firstIndex(of: ":") else { return nil }
        // `Type:name`, followed by `:` and the reason when the branch itself reported it.
        return parts[1][parts[1].index(after: colon)...].split(separator: ":", maxSplits: 1).first.map(String.init)
    }

}
