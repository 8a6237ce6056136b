import Foundation
import Proof
import Testing

/// verify's work is bounded whatever it is given: `proof.jsonl` is read line by line (memory
/// measured: the process's peak, reset before), and problems are printed up to 20 and counted.
/// In ChainCostTests' suite, serialized: its 64 MiB file would otherwise share the peak.
extension ChainCostTests {
    /// Resident memory now, and the peak since the last reset (/proc/self/status, KiB → bytes).
    static func memory() -> (rss: Int, peak: Int) {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> Int {
            let line = status.split(separator: "\n").first { $0.hasPrefix(name + ":") } ?? ""
            return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
        }
        return (field("VmRSS"), field("VmHWM"))
    }

    /// Resets VmHWM to the current RSS (Linux ≥ 4.0: "5" to /proc/self/clear_refs).
    static func resetPeak() -> Bool {
        guard let h = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return false }
        defer { try? h.close() }
        return (try? h.write(contentsOf: Data("5".utf8))) != nil
    }

    @Test("a 200 MB proof.jsonl of garbage (short lines, 1 MB lines, one 60 MB line): peak memory grows by far less than 64 MB; 20 problems shown and the rest counted")
    func boundedWork() async throws {
        let (dir, _) = try await RecordingFixture.make(finished: false)
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent(ProofChain.fileName)
        let h = try FileHandle(forWritingTo: url)
        try h.seekToEnd()
        let short = Data(repeating: UInt8(ascii: "x"), count: 999) + Data([0x0A])
        let block = Data((0..<1000).flatMap { _ in short })
        for _ in 0..<100 { try h.write(contentsOf: block) }
        let mega = Data(repeating: UInt8(ascii: "{"), count: 1 << 20) + Data([0x0A])
        for _ in 0..<40 { try h.write(contentsOf: mega) }
        let piece = Data(repeating: UInt8(ascii: "a"), count: 1 << 20)
        for _ in 0..<60 { try h.write(contentsOf: piece) }
        try h.write(contentsOf: Data([0x0A]))
        try h.close()
        let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int)
        #expect(size > 200_000_000)

        let reset = Self.resetPeak()
        let before = Self.memory()
        let clock = ContinuousClock()
        var r: VerifyReport?
        let took = clock.measure { r = Verifier(directory: dir).run() }
        let after = Self.memory()
        let report = try #require(r)
        let grew = after.peak - before.rss
        print("bounded: verify of a \(size / 1_000_000) MB proof.jsonl took \(took), peak memory +\(grew / 1_000_000) MB (reset: \(reset)); \(report.problemCount) problems")
        #expect(report.verdict == .failed && report.problemCount == 100_000 + 40 + 1, "\(report.problemCount)")
        #expect(report.problems.count == VerifyReport.shownProblems && report.text.contains("and \(100_041 - 20) more problem(s)"))
        #expect(report.text.split(separator: "\n").filter { $0.hasPrefix("  problem: ") }.count == 20 && report.text.utf8.count < 10_000, "\(report.text)")
        #expect(report.checkpoints == 3, "the valid checkpoints before the garbage still count")
        if reset { #expect(grew < 64 << 20, "peak memory grew by \(grew) bytes") }
    }
}
