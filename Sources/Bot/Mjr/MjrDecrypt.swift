import FrameCrypto
public import Foundation
import GStreamerKit
public import Logging
public import Mjr

/// `sfubot mjr decrypt`: Janus's own recordings of an E2EE room (`.mjr`, ciphertext) →
/// playable files. Each publisher's audio `.mjr` becomes an Ogg Opus file; its video, with
/// its audio when both are given, one Matroska file aligned by the files' first-packet times.
///
/// Reading and opening the frames is the `Mjr` module's. Writing the outputs stays here, beside
/// the recorder whose output side it shares: `PipelineLibrary`, `PrivateFiles`, `ReadBack`,
/// `ManifestProof` (which holds `RecordingManifest.Gap`) and `BotError`.
public struct MjrDecrypt {
    public let files: [String]
    public let keys: any MjrKeySource
    public let directory: URL
    public let library: PipelineLibrary
    public let logger: Logger

    public init(files: [String], keys: any MjrKeySource, directory: URL, library: PipelineLibrary, logger: Logger) {
        self.files = files
        self.keys = keys
        self.directory = directory
        self.library = library
        self.logger = logger
    }

    /// Reads every file first (a file that is no recording fails the run before anything is
    /// written), then writes each output and `manifest.json`. Throws `MjrError` for unusable
    /// input, `BotError` for an output folder that cannot be written; an output whose pipeline
    /// fails is reported in the manifest (`error`), and the others are still written.
    public func run() async throws -> MjrManifest {
        var parsed: [MjrFile] = []
        var skipped: [String] = []
        for f in files {
            let file: MjrFile
            do { file = try MjrFile(path: f) } catch {
                guard error.isDataChannel else { throw error }
                logger.info("\(f): a data channel recording, skipped")
                skipped.append((f as NSString).lastPathComponent)
                continue
            }
            parsed.append(file)
        }
        try PrivateFiles.createFolder(directory)
        try PrivateFiles.checkWritable(directory)
        var manifest = MjrManifest(created: Date())
        manifest.skipped = skipped
        var used = Set<String>()
        for group in MjrGroup.of(parsed) {
            let start = group.files.map(\.firstPacket).min()!
            let tracks = group.files.map { f in
                MjrTrack(file: f, keys: keys, sender: group.sender,
                         offset: UInt64(max(0, f.firstPacket.timeIntervalSince(start)) * 1e9))
            }
            var output = MjrManifest.Output(tracks: tracks.map { MjrManifest.Track($0, sender: group.sender) })
            let kept = tracks.filter { !$0.frames.isEmpty }
            if !kept.isEmpty {
                var name = group.base + (kept.contains { $0.file.kind == .video } ? ".mkv" : ".opus")
                var n = 2
                while used.contains(name) { name = "\(group.base)-\(n)\((name as NSString).pathExtension.isEmpty ? "" : "." + (name as NSString).pathExtension)"; n += 1 }
                used.insert(name)
                do {
                    try await MjrOutput.write(kept, to: directory.appendingPathComponent(name), library: library)
                    output.file = name
                    await readBack(&output, kept)
                } catch {
                    output.file = name
                    output.error = error.description
                    logger.error("\(name): \(error)")
                }
            }
            for t in output.tracks {
                logger.info("\(t.input): \(t.frames.opened) of \(t.frames.received) frames opened, \(t.frames.droppedTotal) dropped\(t.truncated ? ", file cut short" : "") → \(output.file ?? "nothing written")")
            }
            manifest.outputs.append(output)
        }
        try manifest.write(to: directory)
        return manifest
    }

    /// What the written file holds, per track, read back: less than was written makes the
    /// output `partial`, which the command reports with a non-zero exit.
    private func readBack(_ output: inout MjrManifest.Output, _ kept: [MjrTrack]) async {
        guard let name = output.file else { return }
        let hasAudio = kept.contains { $0.file.kind == .audio }, hasVideo = kept.contains { $0.file.kind == .video }
        let contents: ReadBack.Contents
        do { contents = try await ReadBack(library: library).read(directory.appendingPathComponent(name), audio: hasAudio, video: hasVideo) } catch {
            output.partial = "\(name) cannot be read back: \(error)"
            logger.error("\(output.partial!)")
            return
        }
        var short: [String] = []
        for (i, t) in output.tracks.enumerated() {
            guard let track = kept.first(where: { ($0.file.path as NSString).lastPathComponent == t.input }) else { continue }
            let disk = (track.file.kind == .video ? contents.video : contents.audio) ?? ReadBack.Track()
            output.tracks[i].written = track.frames.count
            output.tracks[i].onDisk = .init(bytes: contents.bytes, frames: disk.frames, decoded: disk.decoded,
                                            seconds: disk.first.flatMap { f in disk.last.map { $0 - f } })
            if disk.frames < track.frames.count || disk.decoded == 0 {
                short.append("\(t.kind): \(disk.frames) of \(track.frames.count) frames on disk, \(disk.decoded) decoded")
            }
            // The span on disk must be the span written (a timestamp gone wrong stretches or cuts it).
            if let written = track.lastMediaTime.flatMap({ l in track.firstMediaTime.map { l - $0 } }),
               let seconds = output.tracks[i].onDisk?.seconds, abs(seconds - written) > 1 {
                short.append("\(t.kind): \(String(format: "%.2f", seconds)) s on disk, \(String(format: "%.2f", written)) s written")
            }
        }
        if !short.isEmpty {
            output.partial = "\(name) holds less than was written: " + short.joined(separator: "; ")
            logger.error("\(output.partial!)")
        }
    }
}
