import Crypto
import Foundation
import ObjectStore
import Testing
import TestSupport

/// Our signer against an independent one: AWS's published example (S3 documentation,
/// "Signature Calculations for the Authorization Header", GET Object), and botocore's S3
/// signer computing the same requests (Tests/S3/sigv4_botocore.py in the scripts/s3-venv venv).
@Suite struct SigV4Tests {
    static let example = S3Credentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    static let emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    static func sha256(_ bytes: [UInt8]) -> String { SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }

    @Test("AWS's published GET Object example: the same signature")
    func awsExample() {
        let signer = SigV4(credentials: Self.example, region: "us-east-1")
        let request = SigV4.Request(method: "GET", path: "/test.txt",
                                    headers: [("host", "examplebucket.s3.amazonaws.com"), ("range", "bytes=0-9")], payloadHash: Self.emptyHash)
        let date = Date(timeIntervalSince1970: 1_369_353_600) // 2013-05-24T00:00:00Z
        let auth = signer.sign(request, at: date).first { $0.0 == "authorization" }?.1
        #expect(auth == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    struct Case: Encodable {
        let method: String, host: String, path: String
        let params: [[String]], headers: [[String]]
        let body: String, timestamp: String
        let access_key: String, secret_key: String, token: String?, region: String
    }

    @Test("botocore's signer gives the same headers for PUT, multipart steps, odd keys and a session token")
    func matchesBotocore() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let date = Date(timeIntervalSince1970: 1_795_000_000)
        let token = S3Credentials(accessKeyID: "ASIAEXAMPLE", secretAccessKey: "se/cr+et==", sessionToken: "FwoGZXIvYXdzE//token+with/odd=chars")
        let body = Array("Welcome to Amazon S3.".utf8)
        let requests: [(S3Credentials, String, String, SigV4.Request, [UInt8])] = [
            (Self.example, "eu-central-1", "127.0.0.1:9000",
             SigV4.Request(method: "PUT", path: "/bucket/rec/2026/job 1/alice+bob (1).mkv",
                           headers: [("host", "127.0.0.1:9000"), ("content-md5", "dGVzdA=="), ("content-type", "application/octet-stream"),
                                     ("x-amz-meta-sha256", "abc")], payloadHash: Self.sha256(body)), body),
            (Self.example, "us-east-1", "s3.example.com",
             SigV4.Request(method: "POST", path: "/b/k", query: [("uploads", "")], headers: [("host", "s3.example.com")], payloadHash: Self.emptyHash), []),
            (token, "us-west-2", "b.s3.us-west-2.amazonaws.com",
             SigV4.Request(method: "PUT", path: "/dir/ünï~code.webm", query: [("uploadId", "2~abc/def+=="), ("partNumber", "10")],
                           headers: [("host", "b.s3.us-west-2.amazonaws.com"), ("content-md5", "x")], payloadHash: Self.sha256(body)), body),
            (token, "us-east-1", "127.0.0.1:9000",
             SigV4.Request(method: "GET", path: "/bucket", query: [("prefix", "a b/c"), ("list-type", "2"), ("a", "2"), ("a", "1")],
                           headers: [("host", "127.0.0.1:9000"), ("x-amz-meta-spaces", "  two   spaces ")], payloadHash: Self.emptyHash), []),
        ]
        let cases = requests.map { creds, region, host, r, body in
            Case(method: r.method, host: host, path: r.path, params: r.query.map { [$0.0, $0.1] },
                 headers: r.headers.filter { $0.0 != "host" }.map { [$0.0, $0.1] } + [["host", host]],
                 body: body.map { String(format: "%02x", $0) }.joined(), timestamp: SigV4.timestamp(date),
                 access_key: creds.accessKeyID, secret_key: creds.secretAccessKey, token: creds.sessionToken, region: region)
        }
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("sigv4-\(UUID().uuidString.prefix(8)).json")
        try JSONEncoder().encode(cases).write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let run = try await ChildProcess.run("/bin/sh", ["-c", "\"$0\" \"$1\" < \"$2\"", S3Venv.python.path, S3Venv.script("sigv4_botocore.py").path, input.path])
        try #require(run.status == 0, "\(run.errText)")
        let theirs = try JSONDecoder().decode([[String: String]].self, from: run.out)
        try #require(theirs.count == requests.count)
        for (i, (creds, region, _, request, _)) in requests.enumerated() {
            let ours = Dictionary(SigV4(credentials: creds, region: region).sign(request, at: date), uniquingKeysWith: { a, _ in a })
            #expect(ours == theirs[i], "request \(i) (\(request.method) \(request.path))")
        }
    }

    @Test("encoding: unreserved kept, everything else %XX upper case, / kept in paths only")
    func encoding() {
        #expect(SigV4.encode("a-b_c.d~e/f g+h=ü", slash: false) == "a-b_c.d~e/f%20g%2Bh%3D%C3%BC")
        #expect(SigV4.encode("a/b", slash: true) == "a%2Fb")
    }
}
