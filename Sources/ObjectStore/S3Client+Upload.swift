import Foundation
import Crypto

/// What the store holds after a verified upload.
public struct UploadedObject: Sendable, Codable, Equatable {
    public var key: String
    public var url: String
    public var size: Int
    /// Hex SHA-256 of the whole file (also stored as the object's `x-amz-meta-sha256`).
    public var sha256: String
    /// The ETag the store answered and we checked (`<md5>` or `<md5 of part md5s>-<parts>`).
    public var etag: String
    public var parts: Int
}

/// How files are cut: a single PUT up to `multipartThreshold`, parts of `partSize` above it
/// (S3 wants parts of at least 5 MiB but the last, and at most 10 000 of them).
public struct UploadSizes: Sendable {
    public var multipartThreshold: Int
    public var partSize: Int
    public init(multipartThreshold: Int = 16 << 20, partSize: Int = 8 << 20) {
        (self.multipartThreshold, self.partSize) = (multipartThreshold, partSize)
    }
}

extension S3Client {
    /// Uploads the file at `path` to `key` and verifies it: every PUT's ETag against the MD5 of
    /// what was sent (the store also checks our Content-MD5 on arrival), a multipart object's
    /// ETag against the MD5 of its parts' MD5s, then HEAD for size, ETag and our SHA-256.
    /// A multipart upload that fails is aborted, so the store keeps no orphan parts.
    /// `listed`: the size and SHA-256 the file had when it was listed; a file that differs now
    /// (replaced at its path) is refused before anything is sent.
    public func upload(file path: String, key: String, listed: (size: Int, sha256: String)? = nil,
                       sizes: UploadSizes = UploadSizes()) async throws(ObjectStoreError) -> UploadedObject {
        let file = try await LocalFile.open(path)
        let (size, sha256) = try await file.sizeAndSHA256()
        if let listed, listed != (size, sha256) {
            throw ObjectStoreError(.localFile("\(path) is not the file listed for \(key) (\(listed.size) bytes, SHA-256 \(listed.sha256)), "
                + "it has \(size) bytes, SHA-256 \(sha256): replaced since; put the listed file back, or remove it to give it up"))
        }
        let etag: String, parts: Int
        if size <= sizes.multipartThreshold {
            let (bytes, md5Bytes) = try await file.read(at: 0, count: size)
            let md5 = SigV4.hex(md5Bytes)
            let r = try await send("PUT", key: key, headers: [("content-md5", md5Bytes.base64EncodedString()),
                                                              ("content-type", "application/octet-stream"), ("x-amz-meta-sha256", sha256)], body: bytes)
            etag = Self.unquote(r.header("etag") ?? "")
            guard etag == md5 else { throw ObjectStoreError(.checksumMismatch(what: key, expected: md5, answered: etag)) }
            parts = 1
        } else {
            (etag, parts) = try await multipart(file, size: size, key: key, sha256: sha256, partSize: max(sizes.partSize, (size + 9_999) / 10_000))
        }
        // What a later reader gets: the object as stored, not only what the PUT said.
        let stored = try await head(key: key)
        guard stored.size == size else { throw ObjectStoreError(.checksumMismatch(what: "\(key)'s size", expected: "\(size)", answered: "\(stored.size)")) }
        guard stored.etag == etag else { throw ObjectStoreError(.checksumMismatch(what: "\(key) (HEAD)", expected: etag, answered: stored.etag)) }
        if let stored = stored.sha256, stored != sha256 { throw ObjectStoreError(.checksumMismatch(what: "\(key)'s SHA-256", expected: sha256, answered: stored)) }
        return UploadedObject(key: key, url: location.url(key: key), size: size, sha256: sha256, etag: etag, parts: parts)
    }

    private func multipart(_ file: LocalFile, size: Int, key: String, sha256: String, partSize: Int) async throws(ObjectStoreError) -> (String, Int) {
        let started = try await send("POST", key: key, query: [("uploads", "")],
                                     headers: [("content-type", "application/octet-stream"), ("x-amz-meta-sha256", sha256)])
        guard let uploadID = XMLText.element("UploadId", in: started.text) else {
            throw ObjectStoreError(.protocolError("CreateMultipartUpload for \(key) answered no UploadId"))
        }
        do throws(ObjectStoreError) {
            var partMD5s: [Data] = [], list = ""
            var offset = 0, number = 1
            while offset < size {
                let (bytes, md5) = try await file.read(at: offset, count: min(partSize, size - offset))
                let r = try await send("PUT", key: key, query: [("partNumber", "\(number)"), ("uploadId", uploadID)],
                                       headers: [("content-md5", md5.base64EncodedString())], body: bytes)
                let answered = Self.unquote(r.header("etag") ?? "")
                guard answered == SigV4.hex(md5) else {
                    throw ObjectStoreError(.checksumMismatch(what: "\(key) part \(number)", expected: SigV4.hex(md5), answered: answered))
                }
                partMD5s.append(md5)
                list += "<Part><PartNumber>\(number)</PartNumber><ETag>\"\(answered)\"</ETag></Part>"
                offset += bytes.count
                number += 1
            }
            let body = Array("<CompleteMultipartUpload>\(list)</CompleteMultipartUpload>".utf8)
            let done = try await send("POST", key: key, query: [("uploadId", uploadID)], headers: [("content-type", "application/xml")], body: body)
            // S3 can answer 200 and put the error in the body.
            if let code = XMLText.element("Code", in: done.text) {
                throw ObjectStoreError(.status(200, code: code, message: XMLText.element("Message", in: done.text), request: "CompleteMultipartUpload \(key)"))
            }
            let expected = SigV4.hex(Insecure.MD5.hash(data: partMD5s.reduce(Data(), +))) + "-\(partMD5s.count)"
            let etag = Self.unquote(XMLText.element("ETag", in: done.text) ?? "")
            guard etag == expected else { throw ObjectStoreError(.checksumMismatch(what: key, expected: expected, answered: etag)) }
            return (etag, partMD5s.count)
        } catch {
            _ = try? await send("DELETE", key: key, query: [("uploadId", uploadID)])
            throw error
        }
    }
}
