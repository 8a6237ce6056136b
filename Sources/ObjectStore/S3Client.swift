public import AsyncHTTPClient
import Foundation
import Crypto
public import NIOCore
public import NIOHTTP1

/// Signed requests to one bucket of an S3-compatible store (AsyncHTTPClient; no AWS SDK).
public struct S3Client: Sendable {
    public let location: S3Location
    let signer: SigV4
    let http: HTTPClient
    let timeout: TimeAmount

    public init(location: S3Location, credentials: S3Credentials, http: HTTPClient = S3Client.http, timeout: TimeAmount = .seconds(120)) {
        self.location = location
        signer = SigV4(credentials: credentials, region: location.region)
        (self.http, self.timeout) = (http, timeout)
    }

    /// The process's client for stores. A store that refuses connections fails the try at once
    /// (AsyncHTTPClient's default retries the connection until the request's deadline, two
    /// minutes of a queue stuck on one entry); the queue's backoff does the retrying.
    public static let http: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout.connect = .seconds(10)
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    public struct Response: Sendable {
        public let status: Int
        public let headers: HTTPHeaders
        public let body: [UInt8]
        public var text: String { String(decoding: body, as: UTF8.self) }
        public func header(_ name: String) -> String? { headers.first(name: name) }
    }

    /// Sends one signed request; a status outside 2xx is an error with S3's code and message.
    /// Answers of up to `maxAnswer` bytes are read (object bodies for tests, XML otherwise).
    public func send(_ method: String, key: String?, query: [(String, String)] = [], headers extra: [(String, String)] = [],
                     body: [UInt8] = [], maxAnswer: Int = 1 << 20) async throws(ObjectStoreError) -> Response {
        let path = location.path(key: key)
        let payloadHash = SigV4.hex(SHA256.hash(data: body))
        let request = SigV4.Request(method: method, path: path, query: query, headers: [("host", location.hostHeader)] + extra, payloadHash: payloadHash)
        let signed = signer.sign(request, at: Date())
        var url = "\(location.endpoint.scheme ?? "https")://\(location.hostHeader)\(SigV4.encode(path, slash: false))"
        if !query.isEmpty { url += "?" + query.map { "\(SigV4.encode($0.0, slash: true))=\(SigV4.encode($0.1, slash: true))" }.joined(separator: "&") }
        var outgoing = HTTPClientRequest(url: url)
        outgoing.method = HTTPMethod(rawValue: method)
        for (name, value) in request.headers + signed { outgoing.headers.add(name: name, value: value) }
        if !body.isEmpty || method == "PUT" || method == "POST" { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        let what = "\(method) \(path)"
        let answer: Response
        do {
            let response = try await http.execute(outgoing, timeout: timeout)
            let bytes = try await response.body.collect(upTo: maxAnswer)
            answer = Response(status: Int(response.status.code), headers: response.headers, body: Array(buffer: bytes))
        } catch {
            throw ObjectStoreError(.transport("\(what): \(error)"))
        }
        guard (200..<300).contains(answer.status) else {
            throw ObjectStoreError(.status(answer.status, code: XMLText.element("Code", in: answer.text),
                                           message: XMLText.element("Message", in: answer.text), request: what))
        }
        return answer
    }

    /// Creates the bucket (tests and first runs against a fresh S3-compatible store).
    public func createBucket() async throws(ObjectStoreError) {
        do throws(ObjectStoreError) { _ = try await send("PUT", key: nil) } catch {
            if case .status(_, let code, _, _) = error.reason, code == "BucketAlreadyOwnedByYou" || code == "BucketAlreadyExists" { return }
            throw error
        }
    }

    /// An object's bytes (tests, and checks by hand).
    public func get(key: String, maxBytes: Int = 1 << 30) async throws(ObjectStoreError) -> [UInt8] {
        try await send("GET", key: key, maxAnswer: maxBytes).body
    }

    /// An object's size, ETag (unquoted) and user metadata, from HEAD.
    public func head(key: String) async throws(ObjectStoreError) -> (size: Int, etag: String, sha256: String?) {
        let r = try await send("HEAD", key: key, maxAnswer: 0)
        guard let size = r.header("content-length").flatMap(Int.init), let etag = r.header("etag") else {
            throw ObjectStoreError(.protocolError("HEAD \(key) answered without Content-Length or ETag"))
        }
        return (size, Self.unquote(etag), r.header("x-amz-meta-sha256"))
    }

    static func unquote(_ etag: String) -> String { etag.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) }
}

/// The few values read from S3's XML answers (upload ids, ETags, error codes): each is one
/// element's text, so a search for the element is enough and needs no XML parser.
enum XMLText {
    static func element(_ name: String, in xml: String) -> String? {
        guard let open = xml.range(of: "<\(name)>"), let close = xml.range(of: "</\(name)>", range: open.upperBound..<xml.endIndex) else { return nil }
        return String(xml[open.upperBound..<close.lowerBound])
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&#34;", with: "\"").replacingOccurrences(of: "&amp;", with: "&")
    }
}
