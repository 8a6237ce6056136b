/// What a composite relay shows (`sfubot relay --layout`).
public enum CompositeLayout: String, Sendable, CaseIterable {
    /// Everyone publishing video, each in a tile of a grid.
    case grid
    /// The active speaker's picture fills the frame (`ActiveSpeaker`).
    case speaker
}

/// The composite's picture: its size (`--size WxH`) and rate, and what x264 is given for it.
public struct CompositeFormat: Sendable, Equatable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    public var fps: Int

    public init(width: Int = 1280, height: Int = 720, fps: Int = 25) {
        (self.width, self.height, self.fps) = (width, height, fps)
    }

    /// `WxH`, e.g. `1280x720`: even numbers (4:2:0 pictures), from 160x90 to 1920x1080.
    public init(size: String, fps: Int = 25) throws(BotError) {
        let parts = size.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]) else {
            throw .output("--size \(size): give WIDTHxHEIGHT, e.g. 1280x720")
        }
        guard (160...1920).contains(w), (90...1080).contains(h), w % 2 == 0, h % 2 == 0 else {
            throw .output("--size \(size): give even numbers from 160x90 to 1920x1080")
        }
        self.init(width: w, height: h, fps: fps)
    }

    /// About 0.1 bit a pixel: 2.3 Mbit/s for 1280x720 at 25 fps, what a live platform expects.
    var kbps: Int { max(300, width * height * fps / 10_000) }
    /// A keyframe at least every 2 s (RTMP services ask for 2 s to 4 s; HLS segments are 2 s).
    var keyInterval: Int { 2 * fps }

    var pipelineValues: [String: String] {
        ["width": String(width), "height": String(height), "fps": String(fps), "kbps": String(kbps), "keyint": String(keyInterval)]
    }

    public var description: String { "\(width)x\(height) at \(fps) fps" }
}

/// A place in the composite's picture, in pixels.
struct Tile: Sendable, Equatable {
    var x: Int
    var y: Int
    var width: Int
    var height: Int
}

extension CompositeFormat {
    /// `count` tiles in a grid over the whole picture: as many columns as the square root
    /// (rounded up), the rows that takes, filled row by row, the last row's tiles centred.
    /// Each picture is scaled into its tile keeping its aspect ratio (the pad's sizing policy),
    /// so a tile need not have the picture's shape.
    func grid(_ count: Int) -> [Tile] {
        guard count > 0 else { return [] }
        var columns = 1
        while columns * columns < count { columns += 1 }
        let rows = (count + columns - 1) / columns
        let (w, h) = (width / columns & ~1, height / rows & ~1)
        return (0..<count).map { i in
            let (row, column) = (i / columns, i % columns)
            let inRow = row == rows - 1 ? count - row * columns : columns
            let left = (width - inRow * w) / 2 & ~1
            return Tile(x: left + column * w, y: row * h, width: w, height: h)
        }
    }

    /// The whole picture: the active speaker's tile.
    var whole: Tile { Tile(x: 0, y: 0, width: width, height: height) }
}
