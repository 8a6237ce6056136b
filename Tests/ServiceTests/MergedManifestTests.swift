import Bot
import Foundation
@testable import Service
import Testing

/// The merged manifest's arithmetic, no I/O but the manifest it reads: each segment goes to the
/// owner holding the job at its first frame, and each change of owner is a gap from the last
/// frame before it to the first after it.
@Suite struct MergedManifestTests {
    static func feed(_ file: String, _ first: String, _ last: String) -> String {
        """
        {"feed_id": 1, "display": "9:Tone", "user_id": "9", "display_name": "Tone", "mid": "0", "kind": "audio", "codec": "opus",
         "file": "\(file)", "joined": "\(first)", "first_frame": "\(first)", "last_frame": "\(last)",
         "frames": {"sealed": 0, "seal_failed": 0, "received": 10, "opened": 10, "dropped": {}}}
        """
    }

    @Test("two owners and a failover: segments split by owner, one gap of 4.25 s with its cause, files listed as given")
    func failover() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("merged-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let json = """
            {"room": 7, "janus": "ws://127.0.0.1:8188", "e2ee": true, "started": "2026-11-26T08:00:00.000Z", "ended": "2026-11-26T08:01:00.000Z",
             "feeds": [\(Self.feed("1-0.opus", "2026-11-26T08:00:01.000Z", "2026-11-26T08:00:20.500Z")),
                       \(Self.feed("1-1.opus", "2026-11-26T08:00:24.750Z", "2026-11-26T08:00:59.000Z"))]}
            """
        try Data(json.utf8).write(to: dir.appendingPathComponent("manifest.json"))
        let manifest = try RecordingManifest.read(from: dir)
        let t = { (s: String) in try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(s) }
        let owners = [
            JobStatus.Owner(instance: "a", cause: "new", since: try t("2026-11-26T08:00:00.000Z"), until: try t("2026-11-26T08:00:24.000Z"), endCause: "lease expired"),
            JobStatus.Owner(instance: "b", cause: "failover", since: try t("2026-11-26T08:00:24.000Z"), until: nil, endCause: nil),
        ]
        let files = [MergedManifest.File(name: "1-0.opus", key: "p/j/1-0.opus", size: 10, sha256: "aa")]
        let merged = MergedManifest(job: "j", folders: [("", manifest)], owners: owners, files: files)
        #expect(merged.owners.map(\.segments) == [["1-0.opus"], ["1-1.opus"]])
        #expect(merged.gaps.count == 1)
        let gap = try #require(merged.gaps.first)
        #expect(gap.from == "a" && gap.to == "b" && abs((gap.seconds ?? 0) - 4.25) < 0.001, "\(gap)")
        #expect(gap.cause.contains("a's lease ran out"), "\(gap.cause)")
        #expect(merged.files.map(\.key) == ["p/j/1-0.opus"] && merged.room == 7)
    }

    @Test("a failover on the owner's database session's end names that cause, not the lease")
    func sessionEndedCause() throws {
        let t = { (s: String) in try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(s) }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("merged-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data(#"{"room": 7, "janus": "ws://127.0.0.1:8188", "e2ee": true, "started": "2026-11-26T08:00:00.000Z", "feeds": []}"#.utf8)
            .write(to: dir.appendingPathComponent("manifest.json"))
        let owners = [
            JobStatus.Owner(instance: "a", cause: "new", since: try t("2026-11-26T08:00:00.000Z"), until: try t("2026-11-26T08:00:02.000Z"), endCause: "session ended"),
            JobStatus.Owner(instance: "b", cause: "failover", since: try t("2026-11-26T08:00:02.000Z"), until: nil, endCause: nil),
        ]
        let merged = MergedManifest(job: "j", folders: [("", try RecordingManifest.read(from: dir))], owners: owners, files: [])
        let cause = try #require(merged.gaps.first?.cause)
        #expect(cause.contains("a's database session ended") && !cause.contains("lease"), "\(cause)")
    }

    @Test("two owners each on its own disk: both folders' segments, the earlier under its part-N/ prefix though the names are the same; the gap between them; the earliest start")
    func ownDisks() throws {
        let t = { (s: String) in try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(s) }
        func manifest(_ started: String, _ ended: String?, _ feed: String) throws -> RecordingManifest {
            let json = """
                {"room": 7, "janus": "ws://127.0.0.1:8188", "e2ee": true, "started": "\(started)"\(ended.map { ", \"ended\": \"\($0)\"" } ?? ""), "feeds": [\(feed)]}
                """
            return try RecordingManifest.decoder.decode(RecordingManifest.self, from: Data(json.utf8))
        }
        let onA = try manifest("2026-11-26T08:00:00.000Z", nil, Self.feed("1-9.opus", "2026-11-26T08:00:01.000Z", "2026-11-26T08:00:20.000Z"))
        let onB = try manifest("2026-11-26T08:00:21.500Z", "2026-11-26T08:01:00.000Z", Self.feed("1-9.opus", "2026-11-26T08:00:22.250Z", "2026-11-26T08:00:59.000Z"))
        let owners = [
            JobStatus.Owner(instance: "a", cause: "new", since: try t("2026-11-26T08:00:00.000Z"), until: try t("2026-11-26T08:00:21.500Z"), endCause: "session ended"),
            JobStatus.Owner(instance: "b", cause: "failover", since: try t("2026-11-26T08:00:21.500Z"), until: nil, endCause: nil),
        ]
        let merged = MergedManifest(job: "j", folders: [("", onB), ("part-1/", onA)], owners: owners, files: [])
        #expect(merged.owners.map(\.segments) == [["part-1/1-9.opus"], ["1-9.opus"]])
        #expect(abs((merged.gaps.first?.seconds ?? 0) - 2.25) < 0.001, "\(merged.gaps)")
        let (start, end) = (try t("2026-11-26T08:00:00.000Z"), try t("2026-11-26T08:01:00.000Z"))
        #expect(merged.started == start && merged.ended == end)
    }
}
