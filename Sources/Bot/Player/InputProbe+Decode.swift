import Foundation
import GStreamerKit
import Locking
import Synchronization

/// Whether a file's streams decode: the discoverer's duration is an estimate (0 for two MPEG-TS
/// files concatenated, which play whole), so a file is refused for holding nothing only when
/// none of its streams gives a first decoded buffer.
extension InputProbe {
    /// How long decoding may take to give each stream's first buffer.
    static let decodeSeconds = 5

    /// Which of the streams the discoverer found gave a decoded buffer: the file is decoded as
    /// fast as it goes into fake sinks until each has, the file ends or fails, or the time is up.
    static func firstDecoded(_ file: String, audio: Bool, video: Bool) async -> (audio: Bool, video: Bool) {
        guard let pipeline = try? Pipeline(description: """
            filesrc name=src ! decodebin name=dec \
            fakesink name=a sync=false async=false fakesink name=v sync=false async=false
            """),
            let source = try? pipeline.element(named: "src"), (try? source.set("location", file)) != nil,
            let dec = try? pipeline.element(named: "dec"),
            let a = try? pipeline.element(named: "a").staticPad("sink"),
            let v = try? pipeline.element(named: "v").staticPad("sink") else { return (false, false) }
        let links = [dec.followDecodedPads("audio/", into: a), dec.followDecodedPads("video/", into: v),
                     dec.limitDecoderThreads(to: 1)]
        defer { links.forEach { $0.disconnect() } }
        let seen = Locked((audio: false, video: false))
        let (events, event) = AsyncStream.makeStream(of: Void.self)
        a.onFirstBuffer { _ in seen.withLock { $0.audio = true }; event.yield() }
        v.onFirstBuffer { _ in seen.withLock { $0.video = true }; event.yield() }
        let done: @Sendable () -> Bool = { seen.withLock { (!audio || $0.audio) && (!video || $0.video) } }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await pipeline.runToEnd() }
            group.addTask { for await _ in events where done() { return } }
            group.addTask { try? await Task.sleep(for: .seconds(decodeSeconds)) }
            await group.next()
            // Stopped before the bus stream is cancelled: a cancellation while a streaming
            // thread delivers a message deadlocked (BusDispatch yields under its lock).
            await pipeline.stop()
            group.cancelAll()
            event.finish()
        }
        return seen.withLock { $0 }
    }
}
