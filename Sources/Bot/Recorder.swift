public import Foundation
import FrameCrypto
import GStreamerKit
import Janus
import Logging
import Synchronization

/// Records a room: every publisher present and future, each to its own Ogg Opus file,
/// decrypted, without transcoding, with `manifest.json`.
///
/// One publisher handle hears the room (publishers joining and leaving); one multistream
/// subscriber handle and one PeerConnection carry every feed.
public struct Recorder: Sendable {
    public let config: BotConfig
    public let directory: URL
    public let duration: Duration?
    /// Also write one mixed audio track of the whole call here (Ogg Opus).
    public let mixFile: URL?

    public init(config: BotConfig, directory: URL, duration: Duration? = nil, mixFile: URL? = nil) {
        self.config = config
        self.directory = directory
        self.duration = duration
        self.mixFile = mixFile
    }

    /// Records until `duration` elapses or the task is cancelled; then finishes every file and
    /// returns the final manifest.
    public func run() async throws(BotError) -> RecordingManifest {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch { throw .output("cannot create \(directory.path): \(error.localizedDescription)") }
        let session: JanusSession
        do { session = try await JanusSession.connect(url: config.janusURL, options: config.janus, logger: config.logger) } catch { throw .janus(error) }
        let room = RoomRecording(config: config, directory: directory, session: session, mixFile: mixFile)
        do {
            try await room.start()
            try await room.follow(for: duration)
        } catch {
            let manifest = await room.finish()
            await session.close()
            if let manifest, !(error is CancellationError) { config.logger.info("kept \(manifest.feeds.count) recording(s) in \(directory.path)") }
            throw BotError(error)
        }
        let manifest = await room.finish()
        await session.close()
        guard let manifest else { throw .output("could not write manifest.json in \(directory.path)") }
        return manifest
    }
}

/// The recorder's state, serialized in one actor: negotiation, the feed ↔ mid map, and the
/// recordings. The pad-added handler (a GStreamer thread) reads the map through a Mutex.
actor RoomRecording {
    private let config: BotConfig
    private let directory: URL
    private let session: JanusSession
    private let log: Logger
    private let mixFile: URL?
    private var mix: CallMix?
    private let started = Date()
    private var pipeline: Pipeline?
    private var webrtc: WebRTCBin?
    private var roomHandle: JanusHandle?
    private var subscriber: JanusHandle?
    private var privateID: Int64?
    private var publishers: [Int64: RoomPublisher] = [:]
    private var subscribed: Set<Int64> = []
    private var background: [Task<Void, Never>] = []
    private var finished: [RecordingManifest.Feed] = []
    private var timeline: [RecordingManifest.TimelineEvent] = []
    /// Shared with the pad-added handler.
    private let media = SharedMedia()
    /// Yields once if Janus goes away while recording.
    private let lost = AsyncStream.makeStream(of: Void.self)

    /// The map behind a lock, as a reference the pad-added closure can hold.
    final class SharedMedia: Sendable {
        private let state = Mutex(MediaMap())
        func withLock<R>(_ body: (inout MediaMap) -> R) -> R { state.withLock { body(&$0) } }
    }

    struct MediaMap {
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

    init(config: BotConfig, directory: URL, session: JanusSession, mixFile: URL?) {
        self.mixFile = mixFile
        self.config = config
        self.directory = directory
        self.session = session
        self.log = config.logger
    }

    func start() async throws {
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        roomHandle = handle
        guard try await VideoRoom.exists(handle, room: config.room) else { throw BotError.roomNotFound(config.room) }
        let joined = try await VideoRoom.joinAsPublisher(handle, room: config.room, display: config.display)
        privateID = joined.privateID
        log.info("recording room \(config.room) into \(directory.path)")
        let lost = self.lost.continuation
        background.append(Task { [weak self] in
            for await event in handle.events {
                guard case .plugin(let data, let jsep) = event else { continue }
                await self?.roomEvent(VideoRoomEvent(data: data, jsep: jsep))
            }
            // The events end when the session does: unless we are stopping, Janus went away.
            if !Task.isCancelled { lost.yield() }
        })
        try await add(joined.publishers)
        writeManifest()
    }

    /// Waits for the duration (or forever), cancellation, or a fatal media error.
    func follow(for duration: Duration?) async throws {
        let bus = pipelineBus()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                if let duration { try await Task.sleep(for: duration) } else { while true { try await Task.sleep(for: .seconds(3600)) } }
            }
            group.addTask { [weak self] in
                while !Task.isCancelled {
                    try await Task.sleep(for: .seconds(5))
                    await self?.writeManifest()
                }
            }
            let lost = self.lost.stream
            group.addTask {
                for await _ in lost { throw BotError.janus(.disconnected) }
            }
            if let bus {
                group.addTask {
                    for await m in bus {
                        if case .error(let source, let text, _) = m { throw BotError.pipelineFailed("\(source): \(text)") }
                    }
                    try await Task.sleep(for: .seconds(1 << 30))
                }
            }
            do {
                try await group.next()
            } catch is CancellationError {
            }
            group.cancelAll()
        }
    }

    private var busStream: AsyncStream<BusMessage>?
    private func pipelineBus() -> AsyncStream<BusMessage>? { busStream }

    // MARK: - Room events

    private func roomEvent(_ event: VideoRoomEvent) async {
        do {
            switch event {
            case .publishers(let list): try await add(list)
            case .unpublished(let id), .leaving(let id): await publisherLeft(id)
            default: break
            }
        } catch {
            log.error("could not follow the room: \(error)")
        }
    }

    private func add(_ list: [RoomPublisher]) async throws {
        let new = list.filter { !subscribed.contains($0.id) && !$0.streams.isEmpty }
        for p in list { publishers[p.id] = p }
        guard !new.isEmpty else { return }
        for p in new {
            log.info("publisher \(p.id) '\(p.display)' joined")
            timeline.append(.init(time: Date(), event: "joined", feedID: p.id, display: p.display))
        }
        subscribed.formUnion(new.map(\.id))
        if let subscriber {
            let update = try await VideoRoom.add(subscriber, feeds: new.map(\.id))
            if let offer = update.offer { try await negotiate(streams: update.streams, offer: offer) }
        } else {
            try startMedia()
            let handle = try await session.attach(plugin: VideoRoom.plugin)
            subscriber = handle
            background.append(Task { [weak self] in
                for await event in handle.events { await self?.subscriberEvent(event) }
            })
            let joined = try await VideoRoom.subscribe(handle, room: config.room, feeds: new.map(\.id), privateID: privateID)
            try await negotiate(streams: joined.streams, offer: joined.offer)
        }
        writeManifest()
    }

    private func publisherLeft(_ id: Int64) async {
        guard subscribed.remove(id) != nil else { return }
        log.info("publisher \(id) left")
        timeline.append(.init(time: Date(), event: "left", feedID: id, display: publishers[id]?.display ?? ""))
        let done = media.withLock { m -> [FeedRecording] in
            let gone = m.recordings.filter { $0.value.feedID == id }
            for (mid, _) in gone {
                m.recordings[mid] = nil
                if let pad = m.pads[mid] {
                    m.idle[mid] = pad.addDropProbe()
                    pad.unlink()
                }
            }
            return Array(gone.values)
        }
        for r in done {
            if let pipeline { await r.finish(in: pipeline) }
        }
        finished += await merge(done.map(\.entry))
        writeManifest()
    }

    private func subscriberEvent(_ event: HandleEvent) async {
        switch event {
        case .plugin(let data, let jsep):
            if case .updated(let streams, let offer?) = VideoRoomEvent(data: data, jsep: jsep) {
                do { try await negotiate(streams: streams, offer: offer) } catch { log.error("renegotiation failed: \(error)") }
            }
        case .trickle(let mline, let candidate):
            webrtc?.addIceCandidate(mline: mline, candidate: candidate ?? "")
        case .hangup(let reason):
            log.warning("Janus hung up the subscription: \(reason)")
        default:
            break
        }
    }

    // MARK: - Media

    private func startMedia() throws {
        let pipeline = try Pipeline(description: config.pipelines.description("subscribe"))
        let webrtc = try WebRTCBin(pipeline.element(named: "webrtc"))
        for turn in config.turnServers { try webrtc.addTurnServer(turn) }
        let media = self.media, config = self.config, directory = self.directory
        let log = self.log
        busStream = pipeline.bus.messages()
        try pipeline.setState(.playing)
        let mix = try mixFile.map { try CallMix(file: $0, pipeline: pipeline, library: config.pipelines) }
        self.mix = mix
        webrtc.onIncomingPad { incoming in
            guard let mid = incoming.mid else { return }
            RoomRecording.attach(pad: incoming.pad, mid: mid, media: media, pipeline: pipeline, config: config, directory: directory, mix: mix, log: log)
        }
        self.pipeline = pipeline
        self.webrtc = webrtc
    }

    /// Janus's offer for the current streams → answer → `start`.
    private func negotiate(streams: [SubscribedStream], offer: JSEP) async throws {
        guard let webrtc, let subscriber, let pipeline else { return }
        media.withLock { m in for s in streams { m.streams[s.mid] = s } }
        if background.count < 4 {
            let link = PeerLink(webrtc: webrtc, handle: subscriber, logger: log)
            background.append(Task { await link.pump() })
        }
        try await PeerLink(webrtc: webrtc, handle: subscriber, logger: log).answer(offer)
        // Mids Janus reused for a new feed already have a pad: give them a new branch.
        let reused = media.withLock { m in m.pads.filter { m.recordings[$0.key] == nil && m.idle[$0.key] != nil } }
        for (mid, pad) in reused {
            Self.attach(pad: pad, mid: mid, media: media, pipeline: pipeline, config: config, directory: directory, mix: mix, log: log)
        }
    }

    /// Links a webrtcbin pad to a new recording branch, or to a discard branch for what the
    /// recorder does not write. Called from pad-added (a GStreamer thread) and after renegotiation.
    static func attach(pad: Pad, mid: String, media: SharedMedia, pipeline: Pipeline, config: BotConfig, directory: URL, mix: CallMix?, log: Logger) {
        media.withLock { m in
            m.pads[mid] = pad
            let kind: FeedRecording.Kind? = switch m.streams[mid]?.type {
            case "video": .video
            case "audio":
                // A publisher with video gets one Matroska file at the end: its audio goes to a track file.
                m.streams.values.contains { $0.feedID == m.streams[mid]?.feedID && $0.type == "video" && $0.active } ? .audioTrack : .audio
            default: nil
            }
            guard let stream = m.streams[mid], stream.active, let feed = stream.feedID, let kind else {
                if m.discards[mid] == nil, m.recordings[mid] == nil, m.idle[mid] == nil {
                    do {
                        let bin = try pipeline.addBin(description: config.pipelines.description("discard"), name: "discard-\(mid)")
                        bin.syncStateWithParent()
                        try pad.link(to: try bin.staticPad("sink"))
                        m.discards[mid] = bin
                    } catch { log.error("cannot discard stream \(mid): \(error)") }
                }
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
                log.info("recording feed \(feed) \(kind.rawValue) (mid \(mid)) to \(name)")
            } catch {
                log.error("cannot record feed \(feed): \(error)")
            }
        }
    }

    /// Remuxes each publisher's video and audio track files into `<feedId>-<userId>.mkv`;
    /// their entries then name that file. If remuxing fails the track files stay as they are.
    private func merge(_ entries: [RecordingManifest.Feed]) async -> [RecordingManifest.Feed] {
        var out = entries
        for feed in Set(entries.map(\.feedID)) {
            guard let v = out.firstIndex(where: { $0.feedID == feed && $0.file.hasSuffix(".video.mkv") }),
                  let a = out.firstIndex(where: { $0.feedID == feed && $0.file.hasSuffix(".audio.mka") }) else { continue }
            let name = String(out[v].file.dropLast(".video.mkv".count)) + ".mkv"
            let video = directory.appendingPathComponent(out[v].file), audio = directory.appendingPathComponent(out[a].file)
            do {
                let description = try config.pipelines.description("remux", [
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
                log.info("feed \(feed): audio and video in \(name)")
            } catch {
                try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
                log.error("could not put feed \(feed)'s tracks into one file, kept them apart: \(error)")
            }
        }
        return out
    }

    private static func safe(_ s: String) -> String {
        let cleaned = s.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_" ? Character($0) : "_" }
        return cleaned.isEmpty ? "unknown" : String(cleaned.prefix(64))
    }

    // MARK: - Manifest and shutdown

    private func manifest(ended: Date?) -> RecordingManifest {
        let live = media.withLock { $0.recordings.values.map(\.entry) }
        return RecordingManifest(
            room: config.room, janus: config.janusURL, e2ee: config.protection.isEncrypted, started: started, ended: ended,
            feeds: (finished + live).sorted { ($0.joined, $0.feedID, $0.kind) < ($1.joined, $1.feedID, $1.kind) },
            timeline: timeline, mix: mix?.file.path)
    }

    func writeManifest() {
        do { try manifest(ended: nil).write(to: directory) } catch { log.error("cannot write manifest.json: \(error)") }
    }

    /// Ends every recording cleanly, leaves the room and writes the final manifest.
    func finish() async -> RecordingManifest? {
        for t in background { t.cancel() }
        let live = media.withLock { m -> [FeedRecording] in
            for (mid, pad) in m.pads where m.recordings[mid] != nil {
                m.idle[mid] = pad.addDropProbe()
                pad.unlink()
            }
            defer { m.recordings.removeAll() }
            return Array(m.recordings.values)
        }
        if let pipeline {
            await withTaskGroup(of: Void.self) { group in
                for r in live { group.addTask { await r.finish(in: pipeline) } }
            }
        }
        finished += await merge(live.map(\.entry))
        if let mix, let pipeline { await mix.finish(in: pipeline) }
        if let subscriber { await subscriber.detach() }
        if let roomHandle {
            await VideoRoom.leave(roomHandle)
            await roomHandle.detach()
        }
        pipeline?.setStateQuietly(.null)
        media.withLock { $0 = MediaMap() }
        let final = manifest(ended: Date())
        do {
            try final.write(to: directory)
            return final
        } catch {
            log.error("cannot write manifest.json: \(error)")
            return nil
        }
    }
}
