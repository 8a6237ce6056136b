import Foundation
import GStreamerKit
import Locking

/// What the player checks of a file before it joins a room, so that a file that cannot play is
/// refused at once (exit 66, a job `failed`) instead of joining and sending nothing: once
/// published, a pipeline that never produces a frame never even asks webrtcbin to negotiate.
///
/// Three looks: off Swift's cooperative pool (they read the file and run GStreamer's
/// discoverer, which prerolls a pipeline and blocks until it has), the header of a WAV read as
/// bytes (what it declares against what the file holds), then the discoverer for every file
/// (streams, rate, size); then, where its duration says nothing is there (0 or unknown), each
/// stream's first decoded buffer (InputProbe+Decode.swift).
enum InputProbe {
    /// Rates GStreamer's resampler and Opus encoder can follow; WAV allows up to 4 GHz.
    static let rates = 1...768_000
    /// Largest picture side: a bound on what one decoded frame may take (16384² I420 ≈ 400 MB).
    static let maxSide = 16384
    /// How long the discoverer may take before the file counts as unreadable.
    static let discoverSeconds: UInt32 = 5

    /// What the probe found in a playable file.
    struct Found: Sendable {
        var info: MediaInfo
        /// An Ogg of more than one link (files concatenated), which is read in push mode.
        var chainedOgg: Bool
    }

    /// The file's streams, or why it cannot play (`BotError` of category inputMissing).
    static func check(_ file: String) async throws(BotError) -> Found {
        let found = try await OffPool.run { () throws(BotError) -> Found in
            Found(info: try checkBlocking(file), chainedOgg: isChainedOgg(file))
        }
        let info = found.info
        // A duration says the container holds data; where it says none (0, or unknown), the
        // first buffers decide. Not for every file: decoding a 4K picture before the player's
        // own pipeline raised a 4K clip's peak memory from under 420 MB to 441 MB.
        guard info.duration <= 0 || info.duration > 1e9 else { return found }
        let decoded = await firstDecoded(file, audio: info.hasAudio, video: info.hasVideo)
        if !decoded.audio && !decoded.video {
            throw .unplayable(file, "holds no \(info.hasVideo ? "media" : "audio") data: none of its streams decodes")
        }
        if info.hasAudio && !decoded.audio { throw .unplayable(file, "has audio that does not decode") }
        if info.hasVideo && !decoded.video { throw .unplayable(file, "has video that does not decode") }
        return found
    }

    /// Whether an Ogg page that begins a stream (BOS) follows one that does not: a second link.
    /// Reads at most the first 256 MiB.
    static func isChainedOgg(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        var sawData = false, carry: [UInt8] = [], read = 0
        while read < 256 << 20, let chunk = try? handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            if read == 0, !chunk.starts(with: Data("OggS".utf8)) { return false }
            read += chunk.count
            let bytes = carry + [UInt8](chunk)
            var i = 0
            while i + 6 <= bytes.count {
                if bytes[i] == 0x4F, bytes[i + 1] == 0x67, bytes[i + 2] == 0x67, bytes[i + 3] == 0x53, bytes[i + 4] == 0 {
                    let bos = bytes[i + 5] & 0x02 != 0
                    if bos && sawData { return true }
                    if !bos { sawData = true }
                }
                i += 1
            }
            carry = Array(bytes.suffix(5))
        }
        return false
    }

    static func checkBlocking(_ file: String) throws(BotError) -> MediaInfo {
        guard FileManager.default.isReadableFile(atPath: file) else { throw .inputNotFound(file) }
        if let wav = WAVHeader(file) {
            if let why = wav.problem { throw .unplayable(file, why) }
        }
        let info: MediaInfo
        do { info = try MediaInfo.discover(file, timeout: discoverSeconds) } catch { throw .notMedia(file) }
        guard info.hasAudio || info.hasVideo else { throw .notMedia(file) }
        if let why = problem(of: info) { throw .unplayable(file, why) }
        return info
    }

    /// Why discovered streams cannot play, if they cannot.
    static func problem(of info: MediaInfo) -> String? {
        if let audio = info.audioCaps, let rate = capsInt("rate", in: audio), !rates.contains(rate) {
            return "declares a \(rate) Hz rate (playable: \(rates.lowerBound)–\(rates.upperBound) Hz)"
        }
        if let video = info.videoCaps {
            let w = capsInt("width", in: video) ?? 0, h = capsInt("height", in: video) ?? 0
            if w > maxSide || h > maxSide { return "declares a \(w)x\(h) picture (at most \(maxSide) a side)" }
        }
        // No refusal on the duration: it is an estimate (0 for MPEG-TS files concatenated,
        // which play whole); `check` decodes the first buffers instead.
        return nil
    }
}

/// A RIFF/WAVE header as declared, and how many data bytes the file really holds.
struct WAVHeader {
    var sampleRate: Int?
    var declaredDataBytes: UInt64?
    var presentDataBytes: UInt64 = 0

    /// Reads the first 64 KiB of `path`; nil when it is not a RIFF/WAVE file.
    init?(_ path: String) {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let head = try? handle.read(upToCount: 65536), head.count >= 12,
              head.prefix(4) == Data("RIFF".utf8), head[8..<12] == Data("WAVE".utf8) else { return nil }
        let size = (try? handle.seekToEnd()) ?? UInt64(head.count)
        let bytes = [UInt8](head)
        func u32(_ at: Int) -> UInt32 { bytes[at..<at + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) } }
        var at = 12
        while at + 8 <= bytes.count {
            let id = String(decoding: bytes[at..<at + 4], as: UTF8.self), length = u32(at + 4)
            if id == "fmt ", at + 16 <= bytes.count { sampleRate = Int(u32(at + 12)) }
            if id == "data" {
                declaredDataBytes = UInt64(length)
                presentDataBytes = size > UInt64(at + 8) ? size - UInt64(at + 8) : 0
                break
            }
            at += 8 + Int(length) + Int(length & 1)
        }
    }

    /// Why the header cannot play: a rate out of range, no data chunk or no data in it.
    var problem: String? {
        if let rate = sampleRate, !InputProbe.rates.contains(rate) {
            return "declares a \(rate) Hz rate (playable: \(InputProbe.rates.lowerBound)–\(InputProbe.rates.upperBound) Hz)"
        }
        guard let declared = declaredDataBytes else { return nil }
        // A declared size of 0 with bytes after it (a writer that never went back to fix the
        // header) still plays: wavparse reads to the end.
        if presentDataBytes == 0 {
            return "holds no audio data (its header declares \(declared) bytes, the file has \(presentDataBytes) after it)"
        }
        return nil
    }
}
