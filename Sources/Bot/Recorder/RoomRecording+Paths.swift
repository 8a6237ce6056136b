import Foundation

/// The recording's two folders (its own and the mix's) as paths are shown and as they are reached.
extension RoomRecording {
    /// Where the file named `path` (as shown: the manifest's mix and earlier mixes) is reached.
    nonisolated func access(ofShown path: String) -> URL {
        Self.access(ofShown: path, folder: folder, mix: mixFile)
    }

    static func access(ofShown path: String, folder: RecordingFolder, mix: RecordingFile?) -> URL {
        folder.access(ofShown: path) ?? mix?.folder.access(ofShown: path) ?? URL(fileURLWithPath: path)
    }

    /// `text` with the access paths spelled as shown (GStreamer's errors name the location it wrote).
    nonisolated func showing(_ text: String) -> String {
        Self.showing(text, folder: folder, mix: mixFile)
    }

    /// Merges a publisher's track files, through the folder's access path.
    var remux: TrackRemux {
        let (folder, mix) = (self.folder, mixFile)
        return TrackRemux(library: config.pipelines, directory: folder.access, logger: log, show: { Self.showing($0, folder: folder, mix: mix) })
    }

    static func showing(_ text: String, folder: RecordingFolder, mix: RecordingFile?) -> String {
        let inFolder = folder.showing(text)
        return mix?.folder.showing(inFolder) ?? inFolder
    }
}
