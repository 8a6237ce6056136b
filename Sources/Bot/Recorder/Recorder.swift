public import Foundation
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
        try prepareOutputs()
        let room = RoomRecording(config: config, directory: directory, mixFile: mixFile)
        do {
            try await room.start()
            try await room.follow(for: duration)
        } catch {
            let manifest = await room.finish()
            if let manifest, !(error is CancellationError) { config.logger.info("kept \(manifest.feeds.count) recording(s) in \(directory.path)") }
            throw BotError(error)
        }
        let manifest = await room.finish()
        guard let manifest else { throw .output("could not write manifest.json in \(directory.path)") }
        return manifest
    }

    /// Every output checked before joining, so a path that cannot be written ends the run at
    /// once rather than after the call: the folder (created 0700 if missing) takes new files,
    /// and the mix is created (0600).
    func prepareOutputs() throws(BotError) {
        let created = try PrivateFiles.createFolder(directory)
        try PrivateFiles.checkWritable(directory)
        if !created, PrivateFiles.isShared(directory) {
            var log = config.logger
            log[metadataKey: "component"] = "recorder"
            log.warning("other users can open \(directory.path): the recordings in it are private (0600), their names are not")
        }
        if let mixFile { try PrivateFiles.create(mixFile, option: "--mix") }
    }
}
