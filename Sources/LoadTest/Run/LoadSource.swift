import Bot
import Foundation
import GStreamerKit
import Logging

/// The media every publisher bot sends, encoded once: one encoder per kind, whose frames are
/// fanned out in `groups` threads (one per core) to the publishers' payloaders.
final class LoadSource: Sendable {
    enum Kind: String, Sendable { case audio, video }

    let pipeline: Pipeline
    /// Per kind: the fan-out groups, and the caps the encoder settled on.
    private let fanOuts: [Kind: [FanOut]]
    let caps: [Kind: String]
    /// For files: where the loop seeks go.
    private let pace: Pad?

    init(file: String?, video: VideoSettings?, groups: Int, library: PipelineLibrary) async throws {
        var description = try file.map { try library.description("load-source-file", ["file": $0]) } ?? library.description("load-source")
        var kinds: [Kind] = [.audio]
        if let video {
            description += " " + (try library.description("load-source-video", video.pipelineValues))
            kinds.append(.video)
        }
        for kind in kinds {
            for g in 0..<groups {
                description += " \(kind.rawValue). ! queue max-size-buffers=200 max-size-time=0 max-size-bytes=0 leaky=downstream ! fakesink name=\(kind.rawValue)-out\(g) sync=false async=false"
            }
        }
        let pipeline = try Pipeline(description: description)
        var fanOuts: [Kind: [FanOut]] = [:]
        for kind in kinds {
            fanOuts[kind] = try (0..<groups).map { try FanOut(source: pipeline.element(named: "\(kind.rawValue)-out\($0)").staticPad("sink")) }
        }
        self.pipeline = pipeline
        self.fanOuts = fanOuts
        pace = try? pipeline.element(named: "pace").staticPad("sink")
        try pipeline.setState(.playing)
        // Publishers link with the encoders' own caps: wait until they have settled.
        var caps: [Kind: String] = [:]
        for _ in 0..<100 {
            for kind in kinds where caps[kind] == nil {
                caps[kind] = try pipeline.element(named: kind.rawValue).staticPad("sink").caps
            }
            if caps.count == kinds.count { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        guard caps.count == kinds.count else {
            pipeline.setStateQuietly(.null)
            throw BotError.pipelineFailed("the shared encoder produced nothing within 5 s")
        }
        self.caps = caps
        // A file loops: restart it as a segment once it flows (decodebin has linked by now).
        if let pace, !pace.seekUpstream(flush: true, segment: true) {
            pipeline.setStateQuietly(.null)
            throw BotError.pipelineFailed("cannot seek in \(file ?? "the file") to loop it")
        }
    }

    /// The bus, for loop seeks and errors; consume once.
    func follow() async throws {
        for await message in pipeline.bus.messages() {
            switch message {
            case .segmentDone: pace?.seekUpstream(flush: false, segment: true)
            case .error(let source, let text, _): throw BotError.pipelineFailed("shared encoder: \(source): \(text)")
            default: break
            }
        }
    }

    /// The fan-out that feeds bot `index`'s `kind`.
    func fanOut(_ kind: Kind, for index: Int) -> FanOut? {
        guard let list = fanOuts[kind], !list.isEmpty else { return nil }
        return list[index % list.count]
    }

    var hasVideo: Bool { fanOuts[.video] != nil }

    func stop() { pipeline.setStateQuietly(.null) }
}
