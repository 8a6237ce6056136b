import Foundation
import GStreamerKit
import Janus
import Logging
import Synchronization

/// Which mid carries which feed and which branch records it, behind one lock: webrtcbin's
/// pad-added handler (a GStreamer thread) and the recorder's actor both work on it.
final class FeedBranches: Sendable {
    private let state = Mutex(Map())
    private let config: BotConfig
    private let directory: URL
    private let log: Logger

    struct Map {
        /// mid → the stream Janus said it carries.
        var streams: [String: SubscribedStream] = [:]
        /// mid → webrtcbin's src pad for it (pads outlive feeds: Janus reuses mids).
        var pads: [String: Pad] = [:]
        /// mid → the recording currently fed by that pad.
        var recordings: [String: FeedRecording] = [:]
        /// mid → a drop probe that holds the pad while no branch listens.
        var idle: [String: PadProbe] = [:]
        var discards: [String: Bin] = [:]
        var files: Set<String> = []
    }

    init(config: BotConfig, directory: URL, logger: Logger) {
        self.config = config
        self.directory = directory
        log = logger
    }

    /// What Janus says each mid carries now (before the answer that may add pads).
    func learn(_ streams: [SubscribedStream]) {
        state.withLock { m in for s in streams { m.streams[s.mid] = s } }
    }

    /// After a negotiation: mids Janus reused for a new feed already have a pad; give them a branch.
    func reattachReused(pipeline: Pipeline, mix: CallMix?) {
        let reused = state.withLock { m in m.pads.filter { m.recordings[$0.key] == nil && m.idle[$0.key] != nil } }
        for (mid, pad) in reused { attach(pad: pad, mid: mid, pipeline: pipeline, mix: mix) }
    }

    var liveEntries: [RecordingManifest.Feed] { state.withLock { $0.recordings.values.map(\.entry) } }

    /// Stops feeding `feed`'s branches (their pads get a drop probe); returns them to finish.
    func detach(feed: Int64) -> [FeedRecording] {
        state.withLock { m in
            let gone = m.recordings.filter { $0.value.feedID == feed }
            for (mid, _) in gone { Self.unfeed(mid, &m) }
            return Array(gone.values)
        }
    }

    /// Every live branch, detached, to finish at the end.
    func detachAll() -> [FeedRecording] {
        state.withLock { m in
            let live = m.recordings
            for mid in live.keys { Self.unfeed(mid, &m) }
            return Array(live.values)
        }
    }

    private static func unfeed(_ mid: String, _ m: inout Map) {
        m.recordings[mid] = nil
        if let pad = m.pads[mid] {
            m.idle[mid] = pad.addDropProbe()
            pad.unlink()
        }
    }

    func reset() { state.withLock { $0 = Map() } }

    /// Links a webrtcbin pad to a new recording branch, or to a discard branch for what the
    /// recorder does not write. Called from pad-added (a GStreamer thread) and after renegotiation.
    func attach(pad: Pad, mid: String, pipeline: Pipeline, mix: CallMix?) {
        state.withLock { m in
            m.pads[mid] = pad
            let kind: FeedRecording.Kind? = switch m.streams[mid]?.type {
            case "video": .video
            case "audio":
                // A publisher with video gets one Matroska file at the end: its audio goes to a track file.
                m.streams.values.contains { $0.feedID == m.streams[mid]?.feedID && $0.type == "video" && $0.active } ? .audioTrack : .audio
            default: nil
            }
            guard let stream = m.streams[mid], stream.active, let feed = stream.feedID, let kind else {
                discard(pad: pad, mid: mid, pipeline: pipeline, &m)
                return
            }
            let display = stream.feedDisplay ?? ""
            let userID = RecordingManifest.splitDisplay(display).0
            let ext = kind.fileExtension
            var name = "\(feed)-\(Self.safe(userID)).\(ext)"
            var n = 2
            while m.files.contains(name) { name = "\(feed)-\(Self.safe(userID))-\(n).\(ext)"; n += 1 }
            do {
                if let bin = m.discards.removeValue(forKey: mid) { pad.unlink(); pipeline.remove(bin) }
                let idle = m.idle.removeValue(forKey: mid)
                let recording = try FeedRecording(
                    kind: kind, feedID: feed, display: display, mid: mid, file: directory.appendingPathComponent(name),
                    source: pad, pipeline: pipeline, library: config.pipelines, protection: config.protection, tap: config.frameTap, mix: mix, onKeyMissing: config.onKeyMissing)
                idle?.remove()
                m.files.insert(name)
                m.recordings[mid] = recording
                log.info("recording feed \(feed) \(kind.rawValue) (mid \(mid)) to \(name)", metadata: ["janus.feed": "\(feed)"])
            } catch {
                log.error("cannot record feed \(feed): \(error)", metadata: ["janus.feed": "\(feed)"])
                // An unlinked pad would stop the whole PeerConnection (not-linked): discard instead.
                discard(pad: pad, mid: mid, pipeline: pipeline, &m)
            }
        }
    }

    /// A stream the recorder does not write still needs a sink, or it stalls the session.
    private func discard(pad: Pad, mid: String, pipeline: Pipeline, _ m: inout Map) {
        guard m.discards[mid] == nil, m.recordings[mid] == nil, m.idle[mid] == nil else { return }
        do {
            let bin = try pipeline.addBin(description: config.pipelines.description("discard"), name: "discard-\(mid)")
            bin.syncStateWithParent()
            try pad.link(to: try bin.staticPad("sink"))
            m.discards[mid] = bin
        } catch { log.error("cannot discard stream \(mid): \(error)") }
    }

    private static func safe(_ s: String) -> String {
        let cleaned = s.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_" ? Character($0) : "_" }
        return cleaned.isEmpty ? "unknown" : String(cleaned.prefix(64))
    }
}
