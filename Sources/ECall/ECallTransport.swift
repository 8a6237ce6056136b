import AsyncHTTPClient
public import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// One HTTP request to the ECall backend, signed and with its headers set by `ECallClient`.
public struct ECallHTTPRequest: Sendable {
    public var method: String
    public var url: String
    /// The URL's path (what the signature covers).
    public var path: String
    public var headers: [String: String]
    public var body: Data
}

/// The backend's answer: status and body.
public struct ECallHTTPResponse: Sendable {
    public var status: Int
    public var body: Data
    public init(status: Int, body: Data) {
        self.status = status
        self.body = body
    }
}

/// How `ECallClient` exchanges one request for one answer: AsyncHTTPClient in use, a script in
/// tests (which is why it is a protocol: the token refresh is tested without a network).
public protocol ECallTransport: Sendable {
    /// Throws only when nothing was answered (the client reports the backend unreachable).
    func send(_ request: ECallHTTPRequest, timeout: Duration) async throws -> ECallHTTPResponse
}

/// The transport in use: AsyncHTTPClient, answers up to 4 MiB.
struct AsyncHTTPClientTransport: ECallTransport {
    let http: HTTPClient

    func send(_ request: ECallHTTPRequest, timeout: Duration) async throws -> ECallHTTPResponse {
        var r = HTTPClientRequest(url: request.url)
        r.method = .init(rawValue: request.method)
        for (name, value) in request.headers.sorted(by: { $0.key < $1.key }) { r.headers.add(name: name, value: value) }
        if !request.body.isEmpty { r.body = .bytes(ByteBuffer(data: request.body)) }
        let response = try await http.execute(r, timeout: .seconds(timeout.components.seconds))
        let bytes = try await response.body.collect(upTo: 4 << 20)
        return ECallHTTPResponse(status: Int(response.status.code), body: Data(buffer: bytes))
    }
}
