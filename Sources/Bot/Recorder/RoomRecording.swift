import Foundation
import GStreamerKit
import Janus
import Logging

/// The recorder's state, serialized in one actor: the roster it follows, the subscription and
/// its pipeline, and the recordings. The pad-added handler (a GStreamer thread) works on
/// `FeedBranches` under its lock.
actor RoomRecording {
    enum State: Equatable { case idle, starting, recording, finishing, finished }

    /// What exists once the first publisher is there: one pipeline, one PeerConnection.
    struct Media: Sendable {
        let pipeline: Pipeline
        let subscription: Subscription
        let mix: CallMix?
    }

    private(set) var state = State.idle
    private let config: BotConfig
    private let directory: URL
    private let session: JanusSession
    private let log: Logger
    private let mixFile: URL?
    private let started = Date()
    private var roster: RoomRoster?
    private var media: Media?
    private var following: Task<Void, Never>?
    private var finished: [RecordingManifest.Feed] = []
    private var timeline: [RecordingManifest.TimelineEvent] = []
    /// Branches whose first error was handled; their later ones are only logged at debug level.
    private var failedBranches: Set<String> = []
    private let branches: FeedBranches
    /// Yields once if Janus goes away while recording.
    private let lost = AsyncStream.makeStream(of: Void.self)
    /// Yields once when the media pipeline exists, for `follow` to watch its bus.
    private let mediaStarted = AsyncStream.makeStream(of: AsyncStream<BusMessage>.self)

    init(config: BotConfig, directory: URL, session: JanusSession, mixFile: URL?) {
        self.mixFile = mixFile
        self.config = config
        self.directory = directory
        self.session = session
        var log = config.logger
        log[metadataKey: "component"] = "recorder"
        log[metadataKey: "room"] = "\(config.room)"
        self.log = log
        branches = FeedBranches(config: config, directory: directory, logger: log)
    }

    /// Joins the room and subscribes to everyone already there; later changes are followed
    /// one at a time, in order.
    func start() async throws {
        guard state == .idle else { return }
        state = .starting
        let roster = try await RoomRoster.join(session: session, room: config.room, display: config.display, logger: log)
        guard state == .starting else {
            await roster.leave()
            throw CancellationError()
        }
        self.roster = roster
        state = .recording
        log.info("recording room \(config.room) into \(directory.path)")
        try await add(await roster.current)
        let lost = self.lost.continuation
        following = Task { [weak self] in
            for await change in roster.changes {
                switch change {
                case .joined(let list): await self?.addLogged(list)
                case .left(let p): await self?.publisherLeft(p)
                case .lost: lost.yield()
                }
            }
        }
        writeManifest()
    }

    /// Waits for the duration (or forever), cancellation, or a fatal media error.
    func follow(for duration: Duration?) async throws {
        let mediaStarted = self.mediaStarted.stream, lost = self.lost.stream
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
            group.addTask {
                for await _ in lost { throw BotError.janus(.disconnected) }
            }
            group.addTask { [weak self] in
                // Not fatal: one feed's branch must not end everyone's recording.
                for await bus in mediaStarted {
                    for await m in bus {
                        if case .error(let source, let text, let debug) = m { await self?.mediaError(source: source, text: text, debug: debug) }
                    }
                }
                try await Task.sleep(for: .seconds(1 << 30))
            }
            do {
                try await group.next()
            } catch is CancellationError {
            }
            group.cancelAll()
        }
    }

    // MARK: - Room changes

    private func addLogged(_ list: [RoomPublisher]) async {
        do { try await add(list) } catch { log.error("could not follow the room: \(error)") }
    }

    private func add(_ list: [RoomPublisher]) async throws {
        guard state == .recording else { return }
        let new = list.filter { !$0.streams.isEmpty }
        guard !new.isEmpty else { return }
        for p in new {
            log.info("publisher \(p.id) '\(p.display)' joined")
            timeline.append(.init(time: Date(), event: "joined", feedID: p.id, display: p.display))
        }
        // Built before the first await: a second caller finds it and only adds feeds.
        let media = try self.media ?? startMedia()
        try await media.subscription.add(new.map(\.id))
        writeManifest()
    }

    private func publisherLeft(_ p: RoomPublisher) async {
        guard state == .recording, let media else { return }
        // Janus drops a departed publisher's streams from the subscription by itself.
        await media.subscription.forget([p.id])
        log.info("publisher \(p.id) left")
        timeline.append(.init(time: Date(), event: "left", feedID: p.id, display: p.display))
        let done = branches.detach(feed: p.id)
        for r in done { await r.finish(in: media.pipeline) }
        finished += await TrackRemux(library: config.pipelines, directory: directory, logger: log).merge(done.map(\.entry))
        writeManifest()
    }

    // MARK: - Media

    private func startMedia() throws -> Media {
        let pipeline = try Pipeline(description: config.pipelines.description("subscribe"))
        let webrtc = try WebRTCBin(pipeline.element(named: "webrtc"))
        for turn in config.turnServers { try webrtc.addTurnServer(turn) }
        let bus = pipeline.bus.messages()
        try pipeline.setState(.playing)
        let mix = try mixFile.map { try CallMix(file: $0, pipeline: pipeline, library: config.pipelines) }
        let branches = self.branches
        webrtc.onIncomingPad { incoming in
            guard let mid = incoming.mid else { return }
            branches.attach(pad: incoming.pad, mid: mid, pipeline: pipeline, mix: mix)
        }
        let subscription = Subscription(
            session: session, room: config.room, privateID: roster?.privateID, webrtc: webrtc, logger: log,
            hooks: .init(streams: { branches.learn($0) }, negotiated: { branches.reattachReused(pipeline: pipeline, mix: mix) }))
        let media = Media(pipeline: pipeline, subscription: subscription, mix: mix)
        self.media = media
        mediaStarted.continuation.yield(bus)
        return media
    }

    // MARK: - One output failing

    /// A pipeline error: if it comes from one feed's branch, that branch is taken out and the
    /// others go on; if from the mix, the recordings stop feeding it. Logged once per branch,
    /// and counted in the manifest.
    private func mediaError(source: String, text: String, debug: String?) async {
        let branch = debug.flatMap(Self.branch(inPath:))
        guard let branch, let media else {
            log.error("pipeline error from \(source): \(text)", metadata: ["gst.debug": "\(debug ?? "")"])
            return
        }
        guard !failedBranches.contains(branch) else {
            log.debug("again from \(branch): \(text)")
            return
        }
        if CallMix.owns(branch: branch), let mix = media.mix {
            failedBranches.insert(branch)
            guard branch == CallMix.branchName else {
                // One input's decoder: that publisher is no longer heard in the mix.
                log.error("\(branch) no longer feeds the call's mix (\(text)); the mix and the recordings go on")
                branches.note(.init(time: Date(), file: mix.file.path, error: "\(branch): \(text)"))
                return
            }
            guard mix.markFailed() else { return }
            log.error("the call's mix \(mix.file.path) stopped (\(text)): it keeps what was written; every publisher's own file goes on",
                      metadata: ["gst.debug": "\(debug ?? "")"])
            branches.note(.init(time: Date(), file: mix.file.path, error: text))
            writeManifest()
            return
        }
        guard let recording = branches.fail(bin: branch) else {
            log.error("pipeline error from \(source): \(text)", metadata: ["gst.debug": "\(debug ?? "")"])
            return
        }
        failedBranches.insert(branch)
        let file = recording.file.lastPathComponent
        log.error("feed \(recording.feedID) \(recording.kind.media) stopped being recorded (\(text)); \(file) keeps what was written, the other feeds go on",
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

    // MARK: - Manifest and shutdown

    private func manifest(ended: Date?) -> RecordingManifest {
        RecordingManifest(
            room: config.room, janus: config.janusURL, e2ee: config.protection.isEncrypted, started: started, ended: ended,
            feeds: (finished + branches.liveEntries).sorted { ($0.joined, $0.feedID, $0.kind) < ($1.joined, $1.feedID, $1.kind) },
            timeline: timeline, mix: media?.mix?.file.path, errors: branches.errors)
    }

    func writeManifest() {
        do { try manifest(ended: nil).write(to: directory) } catch { log.error("cannot write manifest.json: \(error)") }
    }

    /// Ends every recording cleanly, leaves the room and writes the final manifest.
    func finish() async -> RecordingManifest? {
        guard state != .finishing, state != .finished else { return nil }
        state = .finishing
        following?.cancel()
        let live = branches.detachAll()
        if let media {
            await withTaskGroup(of: Void.self) { group in
                for r in live { group.addTask { await r.finish(in: media.pipeline) } }
            }
        }
        finished += await TrackRemux(library: config.pipelines, directory: directory, logger: log).merge(live.map(\.entry))
        if let media {
            if let mix = media.mix { await mix.finish(in: media.pipeline) }
            await media.subscription.leave()
        }
        await roster?.leave()
        media?.pipeline.setStateQuietly(.null)
        branches.reset()
        state = .finished
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
