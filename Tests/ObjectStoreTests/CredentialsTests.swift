import Foundation
import ObjectStore
import Testing

@Suite struct CredentialsTests {
    @Test("from the environment: both or neither; the token is optional; the description never shows the secret")
    func environment() throws {
        #expect(try S3Credentials.fromEnvironment([:]) == nil)
        #expect(throws: ObjectStoreError.self) { try S3Credentials.fromEnvironment(["AWS_ACCESS_KEY_ID": "AKID"]) }
        let c = try #require(try S3Credentials.fromEnvironment(["AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "s3cr3t", "AWS_SESSION_TOKEN": "tok3n"]))
        #expect(c.accessKeyID == "AKID" && c.secretAccessKey == "s3cr3t" && c.sessionToken == "tok3n")
        #expect(!"\(c)".contains("s3cr3t") && !"\(c)".contains("tok3n"))
    }

    @Test("from a 0600 file (NAME=value or the default profile of an AWS file); a file open to others is refused")
    func file() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-creds-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let plain = dir.appendingPathComponent("plain")
        _ = FileManager.default.createFile(atPath: plain.path, contents: Data("AWS_ACCESS_KEY_ID=AK1\nAWS_SECRET_ACCESS_KEY = se=cret\n".utf8), attributes: [.posixPermissions: 0o600])
        let c = try S3Credentials.read(file: plain.path)
        #expect(c.accessKeyID == "AK1" && c.secretAccessKey == "se=cret" && c.sessionToken == nil)

        let aws = dir.appendingPathComponent("aws")
        _ = FileManager.default.createFile(atPath: aws.path, contents: Data("[other]\naws_access_key_id = NO\naws_secret_access_key = NO\n[default]\naws_access_key_id = AK2\naws_secret_access_key = S2\naws_session_token = T2\n".utf8), attributes: [.posixPermissions: 0o600])
        let d = try S3Credentials.read(file: aws.path)
        #expect(d.accessKeyID == "AK2" && d.secretAccessKey == "S2" && d.sessionToken == "T2")

        let open = dir.appendingPathComponent("open")
        _ = FileManager.default.createFile(atPath: open.path, contents: Data("AWS_ACCESS_KEY_ID=A\nAWS_SECRET_ACCESS_KEY=B\n".utf8), attributes: [.posixPermissions: 0o644])
        #expect { try S3Credentials.read(file: open.path) } throws: { "\($0)".contains("chmod 600") }
    }

    @Test("s3://bucket/prefix: path-style on a given endpoint, virtual-hosted on AWS; keys and URLs")
    func location() throws {
        let custom = try S3Location(storage: "s3://recordings/site-a/", endpoint: "http://127.0.0.1:9000", environment: [:])
        #expect(custom.bucket == "recordings" && custom.prefix == "site-a" && custom.region == "us-east-1")
        #expect(custom.url(key: custom.key("job 1/a.mkv")) == "http://127.0.0.1:9000/recordings/site-a/job%201/a.mkv")
        let aws = try S3Location(storage: "s3://rec", environment: ["AWS_REGION": "eu-west-1"])
        #expect(aws.url(key: aws.key("x")) == "https://rec.s3.eu-west-1.amazonaws.com/x")
        #expect(throws: ObjectStoreError.self) { try S3Location(storage: "s3://Bad_Bucket/x") }
        #expect(throws: ObjectStoreError.self) { try S3Location(storage: "/tmp/x") }
    }
}
