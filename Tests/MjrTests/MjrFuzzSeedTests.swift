import FrameCrypto
import Foundation
import Mjr
import Testing

/// The FuzzMjr seeds (Tests/Fuzz/make-seeds) are recordings whose frames open with the fuzz
/// target's key: otherwise the fuzzer's mutations would stop at the GCM check and never reach
/// the depacketizer or what follows it.
@Suite struct MjrFuzzSeedTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Fuzz/Corpus/FuzzMjr").standardizedFileURL

    @Test(arguments: ["opus-sealed.mjr", "opus-cut.mjr", "h264-sealed.mjr"])
    func seedOpensWithTheFuzzKey(_ name: String) throws {
        let file = try MjrFile(path: Self.corpus.appendingPathComponent(name).path)
        let track = MjrTrack(file: file, keys: MjrFixedKey(try CallKey(bytes: Array(0..<32) as [UInt8])), sender: nil)
        let stats = track.stats.snapshot
        #expect(file.truncated == (name == "opus-cut.mjr"))
        #expect(stats.received == (name == "opus-cut.mjr" ? 2 : 3) && stats.opened == stats.received, "\(stats)")
        if file.kind == .video { #expect(track.keyframes == 1 && track.frames.count == 3) }
    }
}
