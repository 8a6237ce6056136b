public import Foundation
public import Proof
import Janus
import Logging

/// Records a room: every publisher present and future, each to its own file, decrypted,
/// without transcoding, with `manifest.json`.
///
/// One publisher handle hears the room (`RoomRoster`); one multistream subscription
/// (`Subscription`, one PeerConnection) carries every feed. A WebSocket that drops is
/// reconnected and the session claimed; a session or media path Janus lost is rejoined within
/// `config.rejoinTimeout`, each publisher continuing in a new segment file.
public struct Recorder: Sendable {
    public let config: BotConfig
    /// The recording's folder (as shown, and as the file system is reached).
    public let folder: RecordingFolder
    public var directory: URL { folder.shown }
    public let duration: Duration?
    /// Also write one mixed audio track of the whole call here (Ogg Opus).
    public let mix: RecordingFile?
    /// Continue a recording an earlier process left in `directory` (a crash, a restart): its
    /// files and manifest are kept, every publisher continues in a new segment file, and the
    /// time the recorder was away is a gap in the manifest. Without it the folder is recorded
    /// into afresh.
    public var resume = false
    /// Signs checkpoints (`proof.jsonl`) and the final manifest's `proof`; nil: nothing is signed.
    public var signingKey: SigningKey? = nil
    /// The recording every checkpoint names (serve: from its job, the same on every instance);
    /// nil: a new id, this room and Janus, now. A chain continued keeps the one it names.
    public var identity: RecordingIdentity? = nil
    /// The serve instance recording, signed in each checkpoint; nil for `record`.
    public var instance: String? = nil
    /// Taken over from another instance: the first checkpoint links to its last published one.
    public var takeover: ChainTakeover? = nil
    /// The chain's newest checkpoint, for whoever publishes it (serve's lease renewal).
    public let chainHead = ChainHead()
    /// What the recording is doing now (phase, tracks and their counters, last error).
    public let status = LiveStatus()
    /// Pause and resume while it runs; start it paused to keep a paused job paused.
    public var pauses = RecordingPauses()

    public init(config: BotConfig, directory: URL, duration: Duration? = nil, mixFile: URL? = nil) {
        self.init(config: config, folder: RecordingFolder(directory), duration: duration, mix: mixFile.map(RecordingFile.init))
    }

    /// A recording written through `folder`'s and `mix`'s access paths (a serve job's held folders).
    public init(config: BotConfig, folder: RecordingFolder, duration: Duration? = nil, mix: RecordingFile? = nil) {
        self.config = config
        self.folder = folder
        self.duration = duration
        self.mix = mix
    }

    /// Records until `duration` elapses or the task is cancelled; then finishes every file and
    /// returns the final manifest.
    public func run() async throws(BotError) -> RecordingManifest {
        try await config.withTLSBridges { config throws(BotError) in try await record(config) }
    }

    /// Why an earlier run's recording stopped, for the gap: serve says how the job came here.
    var awayCause: String { Self.awayCause(takeover: takeover.map { ($0.cause, $0.from) }, instance: instance) }

    /// `takeover`: how serve's job came here (`failover` or `released`) and from which instance.
    static func awayCause(takeover: (cause: String, from: String?)?, instance: String?) -> String {
        guard let takeover else { return "the recorder was not running (process restarted)" }
        if takeover.cause == "released" { return "released by \(takeover.from ?? "its owner") as it shut down, taken up here" }
        if let from = takeover.from, from == instance {
            return "this instance stopped writing (its lease or database session was lost), then took the job up again"
        }
        return "taken over from \(takeover.from ?? "its owner"), whose lease ran out or database session ended"
    }

    /// `run` with `config`'s `turns:` bridges open.
    private func record(_ config: BotConfig) async throws(BotError) -> RecordingManifest {
        let earlier = resume ? try? RecordingManifest.read(from: folder.access) : nil
        let mixFile = earlier.flatMap { _ in self.mix.map(Self.nextFree) } ?? self.mix
        // Every mix an earlier process began, also one it was killed before naming in its
        // manifest (taken before this run creates its own).
        let mixes = earlier == nil ? [] : self.mix.map { Self.taken($0) } ?? []
        try prepareOutputs(mixFile: mixFile)
        let room = RoomRecording(config: config, folder: folder, mix: mixFile, status: status, pauses: pauses)
        if let signingKey {
            let identity = self.identity ?? RecordingIdentity(id: UUID().uuidString.lowercased(), room: config.room, janus: config.janusURL, started: Date())
            await room.sign(with: signingKey, identity: identity, instance: instance, takeover: takeover, head: chainHead)
        }
        if let earlier {
            await room.resume(from: earlier, awaySince: Self.lastWrite(in: folder.access) ?? Date(), cause: awayCause, mixesOnDisk: mixes)
        }
        do {
            try await room.start()
            try await room.follow(for: duration)
        } catch {
            let manifest = await Finishing.run { await room.finish() }
            if let manifest, !(error is CancellationError) { config.logger.info("kept \(manifest.feeds.count) recording(s) in \(folder.shown.path)") }
            throw BotError(error)
        }
        // Finishing the files is the stop: the cancellation that asked for it must not cut it short.
        let manifest = await Finishing.run { await room.finish() }
        guard let manifest else { throw .output("could not write manifest.json in \(folder.shown.path)") }
        return manifest
    }

    /// What `run` checks before joining (the folder takes files, the mix can be created),
    /// for a caller that wants to refuse a job at once rather than see it fail.
    /// The reserve is made to prove there is room, then given back: the job may never run.
    public func checkOutputs() throws(BotError) {
        try prepareOutputs(mixFile: mix)
        unlink(folder.access.appendingPathComponent(".manifest.reserve").path)
    }

    /// When the manifest was last written: the last moment an earlier recorder is known to
    /// have been recording.
    static func lastWrite(in directory: URL) -> Date? {
        let path = directory.appendingPathComponent("manifest.json").path
        return (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
    }

    /// `file`, or `name-2.ext`, `name-3.ext`… : the first that does not exist (a resumed
    /// recording's mix must not overwrite the earlier one).
    static func nextFree(_ file: RecordingFile) -> RecordingFile {
        var n = 1
        while FileManager.default.fileExists(atPath: file.numbered(n).access.path) { n += 1 }
        return file.numbered(n)
    }

    /// `file`, `name-2.ext`, … up to the first that does not exist: those that do.
    static func taken(_ file: RecordingFile) -> [RecordingFile] {
        var n = 1, found: [RecordingFile] = []
        while FileManager.default.fileExists(atPath: file.numbered(n).access.path) {
            found.append(file.numbered(n))
            n += 1
        }
        return found
    }

    /// Every output checked before joining, so a path that cannot be written ends the run at
    /// once rather than after the call: the folder (created 0700 if missing) takes new files,
    /// and the mix is created (0600).
    /// A held folder exists and was checked where it was opened: it is not made again by name.
    func prepareOutputs(mixFile: RecordingFile?) throws(BotError) {
        let created = folder.isHeld ? false : try PrivateFiles.createFolder(folder.access)
        try PrivateFiles.checkWritable(folder.access, shown: folder.shown)
        if !created, PrivateFiles.isShared(folder.access) {
            var log = config.logger
            log[metadataKey: "component"] = "recorder"
            log.warning("other users can open \(folder.shown.path): the recordings in it are private (0600), their names are not")
        }
        // Room for the last manifest, or no recording: refused now rather than after the call.
        try ManifestFile.reserve(in: folder)
        guard let mixFile else { return }
        try PrivateFiles.create(mixFile.access, option: "--mix", shown: mixFile.shown)
    }
}
