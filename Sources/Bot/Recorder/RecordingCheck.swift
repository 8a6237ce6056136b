import FrameCrypto
import Foundation
import GStreamerKit
import Logging

/// The last step of every recording, however it ended: every file the manifest lists is read
/// back (`ReadBack`) and the manifest says what each holds (`on_disk`). A file holding fewer
/// frames than were written to it, or none that decode, is an error in `errors` (which fails
/// `record` and the serve job); a track of which no frame was written has no file and is listed
/// in `unrecorded`, never in `feeds`.
struct RecordingCheck {
    let library: PipelineLibrary
    /// Where the files are reached (a held folder's `/proc/self/fd/N`).
    let directory: URL
    let logger: Logger
    /// Where the mix, named in the manifest as shown, is reached.
    var mixAccess: @Sendable (String) -> URL = { URL(fileURLWithPath: $0) }
    /// Errors spelled with the folders' shown paths (GStreamer's name the location it read).
    var show: @Sendable (String) -> String = { $0 }

    /// What `RoomRecording.resume` notes on a track an earlier process did not finish (killed):
    /// its file holds what reached the disk, which is compared with nothing.
    static let interrupted = "the recorder stopped before finishing this track: the file holds what was written until then"

    func check(_ manifest: RecordingManifest) async -> RecordingManifest {
        await Finishing.run { await checkNow(manifest) }
    }

    private func checkNow(_ manifest: RecordingManifest) async -> RecordingManifest {
        var m = manifest
        var kept: [RecordingManifest.Feed] = []
        var files: [String] = []
        for f in m.feeds where !files.contains(f.file) { files.append(f.file) }
        for file in files {
            let entries = m.feeds.filter { $0.file == file }
            let url = directory.appendingPathComponent(file)
            let wrote = entries.contains { ($0.written ?? $0.frames.opened) > 0 }
            let contents: ReadBack.Contents
            do {
                contents = try await ReadBack(library: library).read(
                    url, audio: entries.contains { $0.kind == "audio" }, video: entries.contains { $0.kind == "video" })
            } catch {
                let error = show("\(error)")
                if wrote || entries.contains(where: { $0.error == Self.interrupted }) {
                    lost(&m, entries[0], file: file, "\(file) cannot be read back (\(error)): it is not listed as a recording")
                    m.unrecorded += entries.map { var e = $0; e.error = "its file \(file) cannot be read back: \(error)"; return e }
                } else {
                    Self.removeEmpty(url)
                    m.unrecorded += entries
                }
                continue
            }
            var holdsFrames = false
            for var e in entries {
                let t = (e.kind == "video" ? contents.video : contents.audio) ?? ReadBack.Track()
                e.onDisk = .init(bytes: contents.bytes, frames: t.frames, decoded: t.decoded, seconds: t.first.flatMap { f in t.last.map { $0 - f } })
                let expected = e.written ?? e.frames.opened
                if t.frames == 0 {
                    if expected > 0 { lost(&m, e, file: file, "\(file) holds none of the \(expected) \(e.kind) frames written to it") }
                    m.unrecorded.append(e)
                    continue
                }
                if t.decoded == 0 {
                    lost(&m, e, file: file, "the \(e.kind) of \(file) does not decode (\(t.frames) frames): it is not listed as a recording")
                    m.unrecorded.append(e)
                    continue
                }
                if e.error == Self.interrupted {
                    // Killed: what reached the disk is the recording; the manifest it left was up to a second old.
                    e.error = "\(Self.interrupted) (\(t.frames) frames on disk, \(expected) counted at the last manifest)"
                } else if let written = e.written, t.frames < written,
                          !m.errors.contains(where: { $0.feedID == e.feedID && $0.file == file }) {
                    lost(&m, e, file: file, "\(file) holds \(t.frames) of the \(written) \(e.kind) frames written to it")
                }
                holdsFrames = true
                kept.append(e)
            }
            if !holdsFrames, contents.audio?.frames ?? 0 == 0, contents.video?.frames ?? 0 == 0 { Self.removeEmpty(url) }
        }
        m.feeds = kept
        // A mix that failed while recording is in `errors` already, with what it kept.
        if let mix = m.mix, !m.errors.contains(where: { $0.feedID == nil && $0.file == mix }) { await checkMix(&m, shown: mix) }
        m.participants = RecordingManifest.participants(of: m.feeds, recorderGaps: m.gaps)
        return m
    }

    private func checkMix(_ m: inout RecordingManifest, shown: String) async {
        let name = URL(fileURLWithPath: shown).lastPathComponent
        do {
            let c = try await ReadBack(library: library).read(mixAccess(shown), audio: true, video: false)
            let t = c.audio ?? .init()
            m.mixOnDisk = .init(bytes: c.bytes, frames: t.frames, decoded: t.decoded, seconds: t.first.flatMap { f in t.last.map { $0 - f } })
            if t.decoded == 0 { note(&m, .init(time: Date(), file: shown, error: "the mix \(name) holds no audio that decodes")) }
        } catch {
            note(&m, .init(time: Date(), file: shown, error: "the mix \(name) cannot be read back: \(show("\(error)"))"))
        }
    }

    private func lost(_ m: inout RecordingManifest, _ e: RecordingManifest.Feed, file: String, _ text: String) {
        note(&m, .init(time: Date(), feedID: e.feedID, display: e.display, mid: e.mid, kind: e.kind, file: file, error: text))
    }

    private func note(_ m: inout RecordingManifest, _ error: RecordingManifest.OutputError) {
        logger.error("\(error.error)")
        m.errors.append(error)
        BotMetrics.recordingLoss()
    }

    /// A file holding no frame (0 bytes, or a header only) is no recording: removed.
    static func removeEmpty(_ url: URL) { unlink(url.path) }
}
