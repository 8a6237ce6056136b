import Crypto
import Foundation
import ObjectStore
import Testing
import TestSupport

/// The cluster's recordings in object storage: both instances upload to one bucket (moto), and
/// the instance that finishes a job writes its merged manifest (`recording.json`) there.
extension MediaScene.ClusterTests {
    struct Store {
        let client: S3Client
        let flags: [String]
    }

    /// A bucket on `moto` and the serve flags that upload to it.
    static func store(_ moto: LocalServer, dir: URL) async throws -> Store {
        let credentials = dir.appendingPathComponent("s3.credentials")
        _ = FileManager.default.createFile(atPath: credentials.path, contents: Data("AWS_ACCESS_KEY_ID=AKIDCLUSTER\nAWS_SECRET_ACCESS_KEY=cluster-secret\n".utf8),
                                           attributes: [.posixPermissions: 0o600])
        let client = S3Client(location: try S3Location(storage: "s3://sfubot-cluster/rec", endpoint: moto.endpoint, environment: [:]),
                              credentials: S3Credentials(accessKeyID: "AKIDCLUSTER", secretAccessKey: "cluster-secret"))
        try await client.createBucket()
        return Store(client: client, flags: ["--storage", "s3://sfubot-cluster/rec", "--s3-endpoint", moto.endpoint, "--s3-credentials-file", credentials.path])
    }

    /// How a job went from one owner to the next, as the merged manifest says it.
    struct Handover {
        var cause: String, endCause: String, gapCause: String
        static let failover = Handover(cause: "failover", endCause: "session ended", gapCause: "database session ended")
        static let released = Handover(cause: "released", endCause: "released", gapCause: "released")
    }

    /// Reads `recording.json` of job `id` from the bucket and checks it: the owners in order,
    /// every segment of each listed among the files, every file in the bucket with the size and
    /// SHA-256 it names (each downloaded into `folder`), and one gap between the owners, by
    /// default a failover on the first's session's end. Answers the number of files it lists
    /// and the gap in seconds.
    static func checkMerged(_ client: S3Client, id: String, owners: [String], into folder: URL,
                            handover: Handover = .failover) async throws -> (files: Int, gap: Double) {
        let merged = try #require(try JSONSerialization.jsonObject(with: Data(try await client.get(key: "rec/\(id)/recording.json"))) as? [String: Any])
        let listed = try #require(merged["owners"] as? [[String: Any]])
        #expect(listed.map { $0["instance"] as? String } == owners, "\(listed)")
        #expect(listed.last?["cause"] as? String == handover.cause && listed.first?["endCause"] as? String == handover.endCause, "\(listed)")
        let files = try #require(merged["files"] as? [[String: Any]])
        let names = Set(files.compactMap { $0["name"] as? String })
        for owner in listed {
            let segments = owner["segments"] as? [String] ?? []
            #expect(!segments.isEmpty && segments.allSatisfy(names.contains), "\(owner["instance"] ?? "?") wrote segments, each uploaded: \(segments) of \(names.sorted())")
        }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for file in files {
            let name = try #require(file["name"] as? String), key = try #require(file["key"] as? String)
            #expect(key == "rec/\(id)/\(name)")
            let bytes = try await client.get(key: key)
            #expect(bytes.count == file["size"] as? Int, "\(name)")
            #expect(SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() == file["sha256"] as? String, "\(name)")
            // An earlier owner's own disk is under part-N/.
            let path = folder.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: path.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: path)
        }
        #expect(names.contains("manifest.json"))
        let gaps = try #require(merged["gaps"] as? [[String: Any]])
        #expect(gaps.count == 1 && gaps.first?["from"] as? String == owners.first && gaps.first?["to"] as? String == owners.last, "\(gaps)")
        #expect((gaps.first?["cause"] as? String)?.contains(handover.gapCause) == true, "\(gaps)")
        return (files.count, try #require(gaps.first?["seconds"] as? Double, "\(gaps)"))
    }
}
