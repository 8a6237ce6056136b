import Foundation
import GStreamerKit

/// Renders the plots' SVG files to PNG with GStreamer (librsvg's `rsvgdec`, `pngenc`).
enum PlotRaster {
    static func png(directory: URL, names: [String]) async throws {
        for name in names {
            let svg = directory.appendingPathComponent("\(name).svg").path, png = directory.appendingPathComponent("\(name).png").path
            let pipeline = try Pipeline(description: "filesrc location=\"\(svg)\" blocksize=1048576 ! rsvgdec ! videoconvert ! pngenc snapshot=true ! filesink location=\"\(png)\"")
            try await pipeline.runToEnd()
        }
    }
}
