public import Bot
import FrameCrypto
public import Foundation
import GStreamerKit
import Janus
public import Logging
public import Testing
import Locking

/// Every test that runs bots against the real Janus, one at a time: bots from two tests at
/// once would compete for the 2 cores and blur what each test measures.
@Suite(.serialized, .enabled(if: Scene.available, "needs the local Janus: run `make test`"))
public struct MediaScene {}

/// The scene every integration test runs in: the local Janus (scripts/in-netns) and the
/// repository's own pipelines.
public enum Scene {
    public static let janusURL = ProcessInfo.processInfo.environment["SFUBOT_JANUS_URL"]
    public static var available: Bool { janusURL != nil }
    public static let logger: Logger = {
        var l = Logger(label: "test.bot")
        l.logLevel = ProcessInfo.processInfo.environment["SFUBOT_TEST_LOG"] == nil ? .warning : .debug
        return l
    }()

    public static func createRoom() async throws -> Int64 {
        let session = try await JanusSession.connect(url: janusURL!, logger: logger)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        let room = try await VideoRoom.createRoom(handle)
        await session.close()
        return room
    }

    /// `SFUBOT_TEST_RECEIVE_PATH=direct` runs the in-process recorders on the direct path.
    public static func config(room: Int64, display: String, protection: FrameProtection, tap: FrameTap? = nil) throws -> BotConfig {
        var c = BotConfig(janusURL: janusURL!, room: room, display: display, protection: protection, pipelines: try PipelineLibrary(), logger: logger)
        c.frameTap = tap
        c.receivePath = ProcessInfo.processInfo.environment["SFUBOT_TEST_RECEIVE_PATH"].flatMap(ReceivePath.init(rawValue:)) ?? c.receivePath
        return c
    }

    /// A room with ECall's parameters that Janus saves in its config (`permanent`), so it comes
    /// back when Janus restarts, as a deployment's static rooms do.
    public static func createPermanentRoom(_ url: String) async throws -> Int64 {
        let session = try await JanusSession.connect(url: url, logger: Scene.logger)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        let options = VideoRoom.RoomOptions()
        let reply = try await handle.message([
            "request": "create", "permanent": true, "video": true, "videocodec": .string(options.videoCodec),
            "publishers": .int(Int64(options.publishers)), "bitrate": .int(Int64(options.bitrate)), "bitrate_cap": true,
        ])
        await session.close()
        guard let room = reply.data["room"]?.int else { throw PipelineRunError(message: "create gave no room: \(reply.data)") }
        return room
    }

    public static func tempDirectory(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-test-\(name)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// Runs a finite pipeline (GStreamerKit's `runToEnd`), within `limit`: a decode that never
/// ends (a file with a header and no frame once kept `make test` waiting for minutes) fails the
/// test instead of hanging the suite.
public func runToEnd(_ description: String, limit: Duration = .seconds(120)) async throws {
    let pipeline = try Pipeline(description: description)
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await pipeline.runToEnd() }
        group.addTask {
            try await Task.sleep(for: limit)
            throw PipelineRunError(message: "still running after \(limit): \(description)")
        }
        try await group.next()
        group.cancelAll()
    }
}

/// An error from a test helper.
public struct PipelineRunError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
    public init(message: String) { self.message = message }
}

public enum Audio {
    /// A mono WAV tone of `seconds` at `frequency`.
    public static func tone(_ frequency: Double, seconds: Double, in dir: URL) async throws -> URL {
        let url = dir.appendingPathComponent("tone-\(Int(frequency)).wav")
        try await runToEnd("audiotestsrc freq=\(frequency) volume=0.5 samplesperbuffer=480 num-buffers=\(Int(seconds * 100)) ! audio/x-raw,rate=48000,channels=1 ! wavenc ! filesink location=\"\(url.path)\"")
        return url
    }

    /// Decodes an Opus file (Ogg, or Matroska for .mka/.mkv) to 48 kHz mono samples; throws if it does not decode.
    public static func decode(_ file: URL) async throws -> [Int16] {
        let raw = file.deletingPathExtension().appendingPathExtension("raw")
        let demux = ["mka", "mkv"].contains(file.pathExtension) ? "matroskademux" : "oggdemux"
        try await runToEnd("filesrc location=\"\(file.path)\" ! \(demux) ! opusdec ! audioconvert ! audioresample ! audio/x-raw,format=S16LE,channels=1,rate=48000 ! filesink location=\"\(raw.path)\"")
        let data = try Data(contentsOf: raw)
        return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// Like `decode`, but on the file's timeline: a stretch with no frames becomes silence
    /// (`audiorate`), so gaps show. Ogg Opus, or Matroska by its extension.
    public static func decodeTimed(_ file: URL) async throws -> [Int16] {
        let raw = file.deletingPathExtension().appendingPathExtension("timed.raw")
        let demux = ["mkv", "mka"].contains(file.pathExtension) ? "matroskademux" : "oggdemux"
        try await runToEnd("filesrc location=\"\(file.path)\" ! \(demux) ! opusdec ! audioconvert ! audioresample ! audio/x-raw,format=S16LE,channels=1,rate=48000 ! audiorate ! filesink location=\"\(raw.path)\"")
        let data = try Data(contentsOf: raw)
        return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// Start times (seconds) of the 100 ms windows of `samples` without the tone's energy.
    public static func quietWindows(_ samples: [Int16]) -> [Double] {
        stride(from: 0, to: samples.count - 4800, by: 4800).filter { i in
            samples[i..<(i + 4800)].reduce(0.0) { $0 + Double($1) * Double($1) } / 4800 < 1_000_000
        }.map { Double($0) / 48000 }
    }

    /// Mean luma (0–255) of each frame of a Matroska H.264 file, decoded and shrunk to 16x16.
    public static func videoLuma(_ file: URL) async throws -> [Double] {
        let raw = file.deletingPathExtension().appendingPathExtension("gray")
        try await runToEnd("filesrc location=\"\(file.path)\" ! matroskademux ! h264parse ! avdec_h264 ! videoconvert ! videoscale ! video/x-raw,format=GRAY8,width=16,height=16 ! filesink location=\"\(raw.path)\"")
        let data = [UInt8](try Data(contentsOf: raw))
        return stride(from: 0, to: data.count - 255, by: 256).map { i in Double(data[i..<(i + 256)].reduce(0) { $0 + Int($1) }) / 256 }
    }

    /// Power at `frequency` (Goertzel) over `samples`.
    public static func power(_ samples: ArraySlice<Int16>, at frequency: Double, rate: Double = 48000) -> Double {
        let w = 2 * Double.pi * frequency / rate, coeff = 2 * cos(w)
        var s1 = 0.0, s2 = 0.0
        for x in samples {
            let s = Double(x) + coeff * s1 - s2
            s2 = s1
            s1 = s
        }
        return s1 * s1 + s2 * s2 - coeff * s1 * s2
    }

    /// The frequency with the most power between 100 Hz and 4 kHz, over one second from the
    /// middle of the signal: a 10 Hz scan, then 0.5 Hz around the best.
    public static func dominantFrequency(_ samples: [Int16]) -> Double? {
        guard samples.count >= 48000 else { return nil }
        let start = (samples.count - 48000) / 2
        let window = samples[start..<(start + 48000)]
        func best(_ freqs: StrideTo<Double>) -> Double { freqs.max { power(window, at: $0) < power(window, at: $1) }! }
        let coarse = best(stride(from: 100, to: 4000, by: 10))
        return best(stride(from: coarse - 10, to: coarse + 10, by: 0.5))
    }

    /// Share of the signal's energy that sits at `frequency` (±1 Hz bins), 0...1.
    public static func share(_ samples: [Int16], at frequency: Double) -> Double {
        guard samples.count >= 48000 else { return 0 }
        let start = (samples.count - 48000) / 2
        let window = samples[start..<(start + 48000)]
        let total = window.reduce(0.0) { $0 + Double($1) * Double($1) }
        guard total > 0 else { return 0 }
        // Goertzel power over N samples relates to energy as |X|² ≈ (N/2)·E for a pure tone.
        return min(1, power(window, at: frequency) * 2 / Double(window.count) / total)
    }
}

/// Collects tapped frames from streaming threads.
public final class FrameLog: @unchecked Sendable {
    public init() {}
    // @unchecked: every access holds `lock`.
    private let lock = NSLock()
    private var frames: [(FrameTapPoint, Int64, [UInt8])] = []

    public var tap: FrameTap {
        { [self] point, feed, bytes in
            let copy = Array(bytes)
            lock.withLock { frames.append((point, feed, copy)) }
        }
    }

    public func frames(_ point: FrameTapPoint) -> [[UInt8]] { lock.withLock { frames.filter { $0.0 == point }.map(\.2) } }
}

/// A Janus of a test's own, started with the project's `deploy/janus/janusctl` on another port
/// (and, for fault tests, its own RTP port range and session reclaim timeout).
public final class OwnJanus: Sendable {
    public let url: String
    public let port: Int
    /// Janus's UDP ports for media: cutting them cuts this Janus's media and no other's.
    public let rtpPorts: ClosedRange<Int>
    private let runDir: URL
    private let apiSecret: String?
    private let reclaimTimeout: Int

    /// Starts it; `reclaimTimeout` is Janus's `reclaim_session_timeout` in seconds (0: a
    /// session whose WebSocket closed is destroyed at once and cannot be claimed).
    public init(port: Int, in dir: URL, apiSecret: String? = nil, reclaimTimeout: Int = 30, rtpPorts: ClosedRange<Int> = 20000...40000) async throws {
        self.port = port
        self.runDir = dir
        self.apiSecret = apiSecret
        self.reclaimTimeout = reclaimTimeout
        self.rtpPorts = rtpPorts
        url = "ws://127.0.0.1:\(port)"
        try await janusctl("start")
    }

    /// Runs `body` with a Janus of its own and stops that Janus after it, also when it throws.
    public static func with<T>(port: Int, in dir: URL, apiSecret: String? = nil, reclaimTimeout: Int = 30, rtpPorts: ClosedRange<Int> = 20000...40000,
                        _ body: (OwnJanus) async throws -> T) async throws -> T {
        let janus = try await OwnJanus(port: port, in: dir, apiSecret: apiSecret, reclaimTimeout: reclaimTimeout, rtpPorts: rtpPorts)
        do {
            let result = try await body(janus)
            await janus.stop()
            return result
        } catch {
            await janus.stop()
            throw error
        }
    }

    /// Stops it (SIGTERM, SIGKILL after 5 s); safe to call twice.
    public func stop() async { try? await janusctl("stop") }

    /// SIGKILLs it, as a crash would; `restart` brings it back with the same configs, so rooms
    /// created `permanent` come back, and every session, handle and PeerConnection is gone.
    public func kill9() async throws { try await janusctl("kill") }

    /// Starts it again after `kill9` (same port, configs and rooms); returns how long it took
    /// until its WebSocket port took connections (janusctl polls every 100 ms).
    @discardableResult
    public func restart() async throws -> Duration {
        let clock = ContinuousClock(), t0 = clock.now
        try await janusctl("start")
        return clock.now - t0
    }

    private func janusctl(_ verb: String) async throws {
        var env = ProcessInfo.processInfo.environment
        env["SFUBOT_RUN_DIR"] = runDir.path
        env["JANUS_WS_PORT"] = "\(port)"
        env["JANUS_API_SECRET"] = apiSecret
        env["JANUS_RECLAIM_TIMEOUT"] = "\(reclaimTimeout)"
        env["JANUS_RTP_PORTS"] = "\(rtpPorts.lowerBound)-\(rtpPorts.upperBound)"
        let run = try await ChildProcess.run(FileManager.default.currentDirectoryPath + "/deploy/janus/janusctl", [verb], environment: env)
        guard run.status == 0 else { throw PipelineRunError(message: "janusctl \(verb) failed (\(run.status)): \(run.errText)") }
    }
}

/// Lip sync of a test-pattern recording (one Matroska file, H.264 + Opus): for each white
/// flash, the time from the flash to the nearest tick onset, in seconds, on the file's own
/// timestamps.
public enum AVSync {
    private final class Collected: @unchecked Sendable {
        // @unchecked: every access holds `lock`.
        public let lock = NSLock()
        public var frames: [(pts: Double, luma: Double)] = []
        public var audio: [(pts: Double, samples: [Int16])] = []
    }

    /// `timed`: the audio on the file's timeline (`audiorate`: a stretch without frames is
    /// silence), so a jump in the audio's timestamps moves the ticks after it.
    public static func tickMinusFlash(_ file: URL, timed: Bool = false) async throws -> [Double] {
        let pipeline = try Pipeline(description: """
            filesrc location="\(file.path)" ! matroskademux name=d \
            d. ! queue ! h264parse ! avdec_h264 ! videoconvert ! videoscale ! video/x-raw,format=GRAY8,width=16,height=16 ! fakesink name=v sync=false async=false \
            d. ! queue ! opusdec ! audioconvert ! audioresample ! audio/x-raw,format=S16LE,channels=1,rate=48000 \(timed ? "! audiorate" : "") ! fakesink name=a sync=false async=false
            """)
        let c = Collected()
        let probes = [
            try pipeline.element(named: "v").staticPad("sink").addTimedBufferObserver { bytes, pts in
                guard let pts else { return }
                let luma = Double(bytes.reduce(0) { $0 + Int($1) }) / Double(max(1, bytes.count))
                c.lock.withLock { c.frames.append((pts, luma)) }
            },
            try pipeline.element(named: "a").staticPad("sink").addTimedBufferObserver { bytes, pts in
                guard let pts else { return }
                let samples = Array(bytes.bindMemory(to: Int16.self))
                c.lock.withLock { c.audio.append((pts, samples)) }
            },
        ]
        try await pipeline.runToEnd()
        _ = probes
        let frames = c.lock.withLock { c.frames }.sorted { $0.pts < $1.pts }
        let flashes = zip(frames, frames.dropFirst()).filter { $0.luma <= 128 && $1.luma > 128 }.map { $1.pts }
        // Tick onsets: the decoded audio as one signal from its first timestamp, in 1 ms
        // windows; an onset crosses 5 % of the loudest window after 49 quiet ones.
        let chunks = c.lock.withLock { c.audio }.sorted { $0.pts < $1.pts }
        let start = chunks.first?.pts ?? 0
        let pcm = chunks.flatMap(\.samples)
        let energy = stride(from: 0, to: max(0, pcm.count - 47), by: 48).map { i in
            pcm[i..<(i + 48)].reduce(0.0) { $0 + Double($1) * Double($1) }
        }
        let threshold = (energy.max() ?? 0) * 0.05
        let ticks = energy.indices.dropFirst(50).filter { i in
            energy[i] > threshold && energy[(i - 49)..<i].allSatisfy { $0 <= threshold }
        }.map { start + Double($0) * 0.001 }
        return flashes.compactMap { f in ticks.map { $0 - f }.min { abs($0) < abs($1) } }
    }
}

extension Duration {
    public var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
