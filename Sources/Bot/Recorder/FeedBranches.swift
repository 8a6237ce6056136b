import Foundation
import GStreamerKit
import Janus
import Logging
import Synchronization
import Locking

/// Which mid carries which feed and which branch records it, behind one lock: webrtcbin's
/// pad-added handler (a GStreamer thread) and the recorder's actor both work on it.
final class FeedBranches: Sendable {
    private let state = Locked(Map())
    /// Outputs that failed while the others went on, for the manifest (kept across `reset`).
    private let failures = Locked<[RecordingManifest.OutputError]>([])
    private let config: BotConfig
    /// Read by every branch's pause gate.
    private let pause: PauseFlag
    /// Track files are reached through `folder.access`; errors name `folder.shown`.
    private let folder: RecordingFolder
    private let log: Logger
    /// How a branch asks the sender of its mid for a keyframe.
    let keyFrames = KeyFrameRoute()

    struct Map {
        /// mid → the stream Janus said it carries.
        var streams: [String: SubscribedStream] = [:]
        /// mid → webrtcbin's src pad for it (pads outlive feeds: Janus reuses mids).
        var pads: [String: Pad] = [:]
        /// mid → the recording currently fed by that pad.
        var recordings: [String: FeedRecording] = [:]
        /// mid → a drop probe that holds the pad while no branch listens.
        var idle: [String: PadProbe] = [:]
        /// Drop probes on pads a newer pad replaced for their mid: kept until the peer goes.
        var retired: [PadProbe] = []
        var discards: [String: Bin] = [:]
        var files: Set<String> = []
        /// mid → the feed whose branch on it failed, and that branch's name: not given a new
        /// branch while Janus still sends that feed there (it would fail again).
        var failed: [String: (feed: Int64, branch: String)] = [:]
        /// Feeds whose publisher left: no branch until they are subscribed again. An offer Janus
        /// made before the leave, negotiated after it, or a pad that appears late, still names them.
        var left: Set<Int64> = []
        /// Branch name → branches that had it: a new branch never takes the name of one that may
        /// still be being finished (GStreamer refuses a second child of that name).
        var branchNames: [String: Int] = [:]
    }

    init(config: BotConfig, folder: RecordingFolder, pause: PauseFlag = PauseFlag(), logger: Logger) {
        self.config = config
        self.pause = pause
        self.folder = folder
        log = logger
    }

    /// What Janus says each mid carries now (before the answer that may add pads).
    func learn(_ streams: [SubscribedStream]) {
        state.withLock { m in for s in streams { m.streams[s.mid] = s } }
    }

    /// A video stream's first packet came: the direct path's sfbreorder says so before it holds
    /// the packets for lip sync (up to 2 s). Its sender is asked for a keyframe now, not when the
    /// held packets go out and the branch appears: a sender that sends keyframes only when asked
    /// (libwebrtc) would otherwise lose those 2 s to the wait for one. The message does not name
    /// the mid: every live video mid without a branch yet is asked (one, but for a burst of joins).
    func askKeyFramesForVideoWithoutBranch() {
        let mids = state.withLock { m in
            m.streams.filter { mid, s in
                s.type == "video" && s.active && m.recordings[mid] == nil && s.feedID.map { !m.left.contains($0) } == true
            }.keys
        }
        for mid in mids { keyFrames.ask(mid: mid) }
    }

    /// After a negotiation: mids Janus reused for a new feed already have a pad; give them a
    /// branch. Janus may send the new feed there with a new SSRC, on a new pad: then `attach`
    /// moves the branch to it.
    func reattachReused(pipeline: Pipeline, mix: CallMix?) {
        let reused = state.withLock { m in
            m.pads.filter { mid, _ in
                guard let feed = m.streams[mid]?.feedID, m.streams[mid]?.active == true, !m.left.contains(feed) else { return false }
                return m.recordings[mid] == nil && m.idle[mid] != nil && m.failed[mid]?.feed != feed
            }
        }
        for (mid, pad) in reused { attach(pad: pad, mid: mid, pipeline: pipeline, mix: mix) }
    }

    var liveEntries: [RecordingManifest.Feed] { state.withLock { $0.recordings.values.map(\.entry) } }

    var errors: [RecordingManifest.OutputError] { failures.withLock { $0 } }

    func note(_ error: RecordingManifest.OutputError) { failures.withLock { $0.append(error) } }

    /// The recording whose branch is the pipeline child `bin`, detached (its pad gets a drop
    /// probe) so that one feed's failing branch leaves the others alone; nil if no live
    /// recording has that branch.
    func fail(bin: String) -> FeedRecording? {
        state.withLock { m in
            guard let hit = m.recordings.first(where: { $0.value.owns(bin: bin) }) else { return nil }
            let (mid, recording) = (hit.key, hit.value)
            m.failed[mid] = (recording.feedID, recording.branchName)
            Self.unfeed(mid, &m)
            return recording
        }
    }

    /// Its publisher left: stops feeding `feed`'s branches (their pads get a drop probe) and
    /// gives it none until `admit`; returns them to finish.
    func detach(feed: Int64) -> [FeedRecording] {
        state.withLock { m in
            m.left.insert(feed)
            let gone = m.recordings.filter { $0.value.feedID == feed }
            for (mid, _) in gone { Self.unfeed(mid, &m) }
            return Array(gone.values)
        }
    }

    /// `feeds` are being subscribed (again): a publisher that left and came back gets branches.
    func admit(_ feeds: [Int64]) { state.withLock { $0.left.subtract(feeds) } }

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

    /// File names an earlier recording into the same folder used: never written again.
    func reserve(files: [String]) { state.withLock { $0.files.formUnion(files) } }

    /// The PeerConnection is being replaced: its pads, discard branches and mids are forgotten
    /// (the live recordings were detached and finished before); file and branch names stay
    /// taken, and feeds that left stay gone.
    func forgetPeer(pipeline: Pipeline) {
        let discards = state.withLock { m in
            for (_, probe) in m.idle { probe.remove() }
            for probe in m.retired { probe.remove() }
            let d = Array(m.discards.values)
            let (files, names, left) = (m.files, m.branchNames, m.left)
            m = Map()
            (m.files, m.branchNames, m.left) = (files, names, left)
            return d
        }
        for bin in discards { pipeline.remove(bin) }
    }

    /// The newest frame any live recording received (nil if none has had one).
    var newestFrame: Date? {
        state.withLock { m in m.recordings.values.compactMap(\.times.lastDate).max() }
    }

    /// Whether one of `feeds` has a live recording (one whose media could be lost).
    func recordsAny(of feeds: Set<Int64>) -> Bool {
        state.withLock { m in m.recordings.values.contains { feeds.contains($0.feedID) } }
    }

    /// Links a webrtcbin pad to a new recording branch, or to a discard branch for what the
    /// recorder does not write. Called from pad-added (a GStreamer thread) and after renegotiation.
    func attach(pad: Pad, mid: String, pipeline: Pipeline, mix: CallMix?) {
        state.withLock { m in
            if let old = m.pads[mid], old.name != pad.name, replace(old, with: pad, mid: mid, pipeline: pipeline, &m) { return }
            m.pads[mid] = pad
            let kind: FeedRecording.Kind? = switch m.streams[mid]?.type {
            case "video": .video
            case "audio":
                // A publisher with video gets one Matroska file at the end: its audio goes to a track file.
                m.streams.values.contains { $0.feedID == m.streams[mid]?.feedID && $0.type == "video" && $0.active } ? .audioTrack : .audio
            default: nil
            }
            guard let stream = m.streams[mid], stream.active, let feed = stream.feedID, !m.left.contains(feed), let kind else {
                discard(pad: pad, mid: mid, pipeline: pipeline, &m)
                return
            }
            let display = stream.feedDisplay ?? ""
            let userID = RecordingManifest.splitDisplay(display).0
            m.failed[mid] = nil
            let ext = kind.fileExtension
            let name = Self.newName(feed: feed, userID: userID, ext: ext, in: folder.access, &m)
            do {
                if let bin = m.discards.removeValue(forKey: mid) { pad.unlink(); pipeline.remove(bin) }
                let idle = m.idle.removeValue(forKey: mid)
                let recording = try FeedRecording(
                    kind: kind, feedID: feed, display: display, mid: mid, branch: Self.newBranchName(feed: feed, mid: mid, &m),
                    file: folder.access.appendingPathComponent(name),
                    source: pad, pipeline: pipeline, library: config.pipelines, protection: config.protection, tap: config.frameTap, mix: mix,
                    pause: pause, onKeyMissing: config.onKeyMissing, keyHold: config.onKeyMissing == nil ? .none : config.keyHold,
                    askKeyFrame: { [keyFrames] in keyFrames.ask(mid: mid) }, onMixLoss: { [weak self] in self?.note($0) }, logger: log)
                idle?.remove()
                m.recordings[mid] = recording
                log.info("recording feed \(feed) \(kind.rawValue) (mid \(mid)) to \(name)", metadata: ["janus.feed": "\(feed)"])
            } catch {
                let error = folder.showing("\(error)")
                log.error("cannot record feed \(feed) \(kind.rawValue) (mid \(mid)); the other feeds go on: \(error)", metadata: ["janus.feed": "\(feed)"])
                note(.init(time: Date(), feedID: feed, display: display, mid: mid, kind: kind.media, file: nil, error: error))
                // An unlinked pad would stop the whole PeerConnection (not-linked): discard instead.
                discard(pad: pad, mid: mid, pipeline: pipeline, &m)
            }
        }
    }

    /// Branches that failed (a full disk) get new ones on their pads, each in a new file, if
    /// Janus still sends the same feed there; returns how many.
    func retry(branches names: Set<String>, pipeline: Pipeline, mix: CallMix?) -> Int {
        let pads = state.withLock { m in
            let mids = m.failed.filter { mid, f in names.contains(f.branch) && m.streams[mid]?.feedID == f.feed && !m.left.contains(f.feed) }.map(\.key)
            for mid in mids { m.failed[mid] = nil }
            return mids.compactMap { mid in m.pads[mid].map { (mid, $0) } }
        }
        for (mid, pad) in pads { attach(pad: pad, mid: mid, pipeline: pipeline, mix: mix) }
        return pads.count
    }

    /// A new pad for a mid that had one: Janus sends a reused m-line's new feed with a new SSRC.
    /// The old pad drops whatever still comes (never unlinked while data may flow: not-linked
    /// would stop the whole PeerConnection) and its branch, if any, is linked to the new pad;
    /// true if that is done. Its discard branch goes.
    private func replace(_ old: Pad, with pad: Pad, mid: String, pipeline: Pipeline, _ m: inout Map) -> Bool {
        m.retired.append(m.idle.removeValue(forKey: mid) ?? old.addDropProbe())
        let sink = old.peer
        old.unlink()
        if let bin = m.discards.removeValue(forKey: mid) { pipeline.remove(bin) }
        m.pads[mid] = pad
        guard let recording = m.recordings[mid], let sink else { return false }
        do {
            try pad.link(to: sink)
            log.info("feed \(recording.feedID) \(recording.kind.rawValue) (mid \(mid)) goes on from pad \(pad.name)", metadata: ["janus.feed": "\(recording.feedID)"])
        } catch {
            log.error("feed \(recording.feedID) (mid \(mid)) could not follow its new pad \(pad.name): \(error)", metadata: ["janus.feed": "\(recording.feedID)"])
            m.retired.append(pad.addDropProbe())
        }
        return true
    }

    /// A file name for `feed` that no file of this recording has had, reserved: never over a file
    /// already there (an earlier recording's, a resumed one, or the same folder reused).
    private static func newName(feed: Int64, userID: String, ext: String, in directory: URL, _ m: inout Map) -> String {
        var name = "\(feed)-\(safe(userID)).\(ext)"
        var n = 2
        while m.files.contains(name) || FileManager.default.fileExists(atPath: directory.appendingPathComponent(name).path) {
            name = "\(feed)-\(safe(userID))-\(n).\(ext)"
            n += 1
        }
        m.files.insert(name)
        return name
    }

    /// `feed-<feed>-<mid>`, with `-<n>` from its second branch on: one being finished off-thread
    /// (up to seconds) is still in the pipeline under its name.
    private static func newBranchName(feed: Int64, mid: String, _ m: inout Map) -> String {
        let base = "feed-\(feed)-\(mid)"
        let n = m.branchNames[base, default: 0] + 1
        m.branchNames[base] = n
        return n == 1 ? base : "\(base)-\(n)"
    }

    /// A stream the recorder does not write still needs a sink, or it stalls the session.
    private func discard(pad: Pad, mid: String, pipeline: Pipeline, _ m: inout Map) {
        guard m.discards[mid] == nil, m.recordings[mid] == nil, m.idle[mid] == nil else { return }
        do { m.discards[mid] = try config.pipelines.discard(pad, mid: mid, in: pipeline) } catch { log.error("cannot discard stream \(mid): \(error)") }
    }

    /// The most of a user id a file name holds, in UTF-8 bytes: with the feed id, a counter and
    /// the extension the name stays far below the 255 bytes file systems allow.
    static let nameBytes = 64

    /// `s` with what is not a letter, digit, `-` or `_` replaced by `_`, cut to `nameBytes`
    /// on a character boundary (never inside a character or its combining marks).
    static func safe(_ s: String) -> String {
        var cleaned = String.UnicodeScalarView()
        for c in s.unicodeScalars { cleaned.append(CharacterSet.alphanumerics.contains(c) || c == "-" || c == "_" ? c : "_") }
        var out = "", bytes = 0
        for character in String(cleaned) {
            bytes += character.utf8.count
            guard bytes <= nameBytes else { break }
            out.append(character)
        }
        return out.isEmpty ? "unknown" : out
    }
}
