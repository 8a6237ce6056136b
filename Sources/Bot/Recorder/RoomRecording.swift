import Foundation
import GStreamerKit
import Janus
import Logging

/// The recorder's state, serialized in one actor: the session and roster it follows, the
/// pipeline, the PeerConnection of the moment and its subscription, and the recordings. The
/// pad-added handler (a GStreamer thread) works on `FeedBranches` under its lock.
///
/// The pipeline (and the mix in it) lives as long as the recording; the session, the roster
/// and the PeerConnection are replaced when Janus loses them (`RoomRecording+Rejoin`).
actor RoomRecording {
    enum State: Equatable {
        case idle, starting, recording
        /// Janus or the media path was lost: every file is finished, and the recorder is
        /// coming back (new session, or only a new PeerConnection).
        case rejoining
        case finishing, finished
    }

    /// What exists once the first publisher is there: one pipeline, with the mix in it.
    struct Media: Sendable {
        let pipeline: Pipeline
        let mix: CallMix?
    }

    /// One PeerConnection to Janus: a webrtcbin in the pipeline and the subscription on it.
    struct Peer: Sendable {
        let webrtc: WebRTCBin
        let subscription: Subscription
        let following: Task<Void, Never>
        let started: ContinuousClock.Instant
        let number: Int  // which webrtcbin of the recording (1, 2, …)
        let negotiationFailed: NegotiationFlag
        let shortcut: ReceiveShortcut  // `--receive-path direct`'s (ReceiveShortcut.swift)
    }

    var state = State.idle { didSet { status.set(state.phase) } }
    let status: LiveStatus
    /// Its TURN credentials are fetched again when the TURN server refuses them (`refreshedTURN`).
    var config: BotConfig
    /// The recording's folder: files reached through `folder.access`, named by `folder.shown`.
    let folder: RecordingFolder
    let log: Logger
    let mixFile: RecordingFile?
    var started = Date()
    /// Mixes of the recording before this process resumed it.
    var earlierMixes: [String] = []
    var session: JanusSession?
    var roster: RoomRoster?
    var media: Media?
    var peer: Peer?
    /// webrtcbins made so far (each new one gets the next name).
    var peers = 0
    /// The latest PeerConnection's selected ICE candidate pair, for the manifest.
    var candidatePair: CandidatePair?
    /// Relay-only TURN failures in a row (reset once a candidate pair works): their backoff.
    var turnFailures = 0
    var candidateReads = 0
    /// ICE connected on the current PeerConnection and its pair not read yet: read every second.
    var pairPending = false
    /// The receive buffer was capped by net.core.rmem_max (warned once).
    var receiveBufferCapped = false
    /// Kernel drops on the media sockets: of PeerConnections replaced, of the current one.
    var receiveDrops = (earlier: 0, current: 0, read: false)
    /// Packets the jitter buffers gave up on, read while the kernel drops packets, and packets a
    /// retransmission brought back: of PeerConnections replaced, of the current one; the first loss.
    var unrepaired = (earlier: 0, current: 0, since: Date?.none, repairedEarlier: 0, repaired: 0)
    /// PeerConnections replaced because Janus's offer could not be answered.
    var negotiationFailures = 0
    var following: Task<Void, Never>?
    var rejoining: Task<Void, Never>?
    var finished: [RecordingManifest.Feed] = []
    /// Leaves whose files are being finished: the stop waits for them (`takeLeaving`).
    var leaving: [UUID: Task<[RecordingManifest.Feed], Never>] = [:]
    var timeline: [RecordingManifest.TimelineEvent] = []
    /// Who was in the room and when (`RoomPresence`); media reached at least once (`checkReached`).
    var presence = RoomPresence()
    var reachedMedia = false
    /// The recorder's own outages, and what brought it back.
    var gaps: [RecordingManifest.Gap] = []
    var counters = RecordingManifest.Reconnection()
    /// The current session's own counts (connection drops and claims), read now and then.
    var sessionCounts = (drops: 0, reclaims: 0)
    /// Branches whose first error was handled; their later ones are only logged at debug level.
    var failedBranches: Set<String> = []
    /// No frame on the current PeerConnection for a while: what Janus's reports say (`checkMediaFlow`).
    var silence: SilenceWatch?
    /// Since when the disk is full (nil if it is not), and the branches that stopped for it.
    var diskFullSince: Date?
    var fullBranches: Set<String> = []
    let branches: FeedBranches
    /// manifest.json, with room kept for it on a full disk.
    let manifestFile: ManifestFile
    /// Checkpoints and the signed final proof (`--signing-key`); nil without a key.
    var proof: RecordingProof?
    /// Yields once if the recorder could not come back within `rejoinTimeout`.
    let gaveUp = AsyncStream.makeStream(of: BotError.self)
    /// Yields once when the room was destroyed: the call is over, the recording ends cleanly.
    let roomGone = AsyncStream.makeStream(of: Void.self)
    /// Yields once when the media pipeline exists, for `follow` to watch its bus.
    private let mediaStarted = AsyncStream.makeStream(of: AsyncStream<BusMessage>.self)

    /// Opens sessions: the first and those of every rejoin.
    let connect: Rejoin.Connect
    let hooks: Hooks
    /// Pause and resume, shared with the `Recorder` (and so with the service's job).
    let pauses: RecordingPauses

    init(config: BotConfig, directory: URL, mixFile: URL?, status: LiveStatus = LiveStatus(), pauses: RecordingPauses = RecordingPauses(),
         connect: Rejoin.Connect? = nil, hooks: Hooks = Hooks()) {
        self.init(config: config, folder: RecordingFolder(directory), mix: mixFile.map(RecordingFile.init), status: status, pauses: pauses,
                  connect: connect, hooks: hooks)
    }

    init(config: BotConfig, folder: RecordingFolder, mix mixFile: RecordingFile?, status: LiveStatus = LiveStatus(), pauses: RecordingPauses = RecordingPauses(),
         connect: Rejoin.Connect? = nil, hooks: Hooks = Hooks()) {
        self.pauses = pauses
        self.connect = connect ?? config.connector
        self.hooks = hooks
        self.status = status
        self.mixFile = mixFile
        self.config = config
        self.folder = folder
        var log = config.logger
        log[metadataKey: "component"] = "recorder"
        log[metadataKey: "room"] = "\(config.room)"
        self.log = log
        branches = FeedBranches(config: config, folder: folder, pause: pauses.flag, logger: log)
        manifestFile = ManifestFile(folder: folder)
    }

    /// Connects, joins the room and subscribes to everyone already there; later changes are
    /// followed one at a time, in order.
    func start() async throws {
        guard state == .idle else { return }
        state = .starting
        let session = try await connect(log)
        // `finish()` may have run while connecting: it found no session to close.
        guard state == .starting else {
            await session.close()
            throw CancellationError()
        }
        self.session = session
        let roster: RoomRoster
        do { roster = try await RoomRoster.join(session: session, room: config.room, display: config.display, logger: log) } catch {
            await session.close()
            self.session = nil
            throw error
        }
        guard state == .starting else {
            // `finish()` ran during the join; the session may not have been ours to close yet.
            await roster.leave()
            await session.close()
            throw CancellationError()
        }
        self.roster = roster
        state = .recording
        if let last = gaps.indices.last, gaps[last].end == nil { gaps[last].close(cause: nil) }
        log.info("recording room \(config.room) into \(folder.shown.path)")
        try await add(await roster.current)
        follow(roster)
        writeManifest()
    }

    /// Consumes the roster's changes; a roster whose session ended starts a rejoin.
    func follow(_ roster: RoomRoster) {
        following = Task { [weak self] in
            for await change in roster.changes {
                switch change {
                case .joined(let list): await self?.addLogged(list)
                case .left(let p): await self?.publisherLeft(p)
                case .lost: await self?.startRejoin("the Janus session ended", rejoinSession: true)
                case .roomDestroyed: await self?.roomDestroyed()
                }
            }
        }
    }

    /// Waits for the duration (or forever), cancellation, giving up on rejoining, or a fatal
    /// media error.
    func follow(for duration: Duration?) async throws {
        let mediaStarted = self.mediaStarted.stream, gaveUp = self.gaveUp.stream, roomGone = self.roomGone.stream
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                if let duration { try await Task.sleep(for: duration) } else { while true { try await Task.sleep(for: .seconds(3600)) } }
            }
            group.addTask { [weak self] in
                // Every second: after a crash, a resumed recording knows to the second when it stopped.
                var tick = 0
                while !Task.isCancelled {
                    try await Task.sleep(for: .seconds(1))
                    await self?.readSessionCounters()
                    await self?.resumeAfterDiskFull()
                    await self?.readCandidatePair()
                    await self?.writeManifest()
                    tick += 1
                    if tick % RecordingProof.interval == 0 { await self?.checkpoint() }
                }
            }
            group.addTask { [weak self] in
                // No media on a PeerConnection that had it: its path is lost (ICE).
                while !Task.isCancelled {
                    try await Task.sleep(for: .milliseconds(500))
                    await self?.checkMediaFlow()
                    await self?.checkReached()
                }
            }
            group.addTask {
                for await error in gaveUp { throw error }
            }
            group.addTask {
                for await _ in roomGone { return }
                try await Task.sleep(for: .seconds(1 << 30))
            }
            group.addTask { [weak self] in
                // Not fatal: one feed's branch must not end everyone's recording.
                for await bus in mediaStarted {
                    for await m in bus {
                        switch m {
                        case .error(let source, let text, let debug): await self?.mediaError(source: source, text: text, debug: debug)
                        case .element(_, SfbReorder.firstVideoPacket): self?.branches.askKeyFramesForVideoWithoutBranch()
                        case .qos(let source, _, _, let dropped): await self?.media?.mix?.qos(source: source, dropped: dropped)
                        default: break
                        }
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

    /// Takes over what an earlier process recorded into the same folder: its tracks (those it
    /// did not finish are marked so), timeline, gaps, counters and errors; new segments get new
    /// file names, and the time away is a gap that ends when the recorder is back.
    /// `mixesOnDisk`: the mix files earlier processes began (a 0-byte one, begun by a process
    /// killed before its first page, is removed, never listed).
    func resume(from earlier: RecordingManifest, awaySince: Date, cause: String, mixesOnDisk: [RecordingFile] = []) {
        started = earlier.started
        finished = earlier.feeds.map { feed in
            var f = feed
            if f.left == nil {
                f.left = f.lastFrame ?? awaySince
                f.error = f.error ?? RecordingCheck.interrupted
            }
            return f
        }
        timeline = earlier.timeline
        gaps = earlier.gaps
        pauses.adopt(earlier.pauses, awaySince: awaySince)
        for i in gaps.indices where gaps[i].end == nil { gaps[i].close(at: awaySince, cause: nil) }
        gaps.append(.init(start: awaySince, cause: cause))
        counters = earlier.reconnection
        earlierMixes = earlier.earlierMixes + (earlier.mix.map { [$0] } ?? [])
        for file in mixesOnDisk where !earlierMixes.contains(file.shown.path) {
            let size = (try? FileManager.default.attributesOfItem(atPath: file.access.path)[.size] as? Int) ?? 0
            if size > 0 { earlierMixes.append(file.shown.path) } else { unlink(file.access.path) }
        }
        earlierMixes.removeAll { path in
            let access = self.access(ofShown: path).path
            let size = (try? FileManager.default.attributesOfItem(atPath: access)[.size] as? Int) ?? 0
            if size == 0 { unlink(access) }
            return size == 0
        }
        for e in earlier.errors { branches.note(e) }
        // A merge the earlier process was killed in: its track files are listed and kept.
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.access.path)) ?? [] where name.hasPrefix(".") && name.hasSuffix(".partial") {
            unlink(folder.access.appendingPathComponent(name).path)
        }
        branches.reserve(files: earlier.feeds.map(\.file))
        log.info("resuming the recording in \(folder.shown.path): \(earlier.feeds.count) earlier track(s) kept, new segments follow")
    }

    // MARK: - Media

    /// The pipeline, with the mix in it; made with the first PeerConnection (`startPeer`).
    func startMedia() throws -> Media {
        let pipeline = try Pipeline(description: config.pipelines.description("subscribe"))
        let bus = pipeline.bus.messages()
        try pipeline.setState(.playing)
        let mix = try mixFile.map { try CallMix(file: $0, pipeline: pipeline, library: config.pipelines) }
        let media = Media(pipeline: pipeline, mix: mix)
        self.media = media
        mediaStarted.continuation.yield(bus)
        return media
    }
}
