import Foundation
import Janus
@testable import Service
import Testing

/// The document the service serves at /openapi.json is docs/openapi.json, and it says what
/// every route needs.
@Suite struct OpenAPIDocumentTests {
    static let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/openapi.json")

    @Test("the served document is docs/openapi.json byte for byte (compiled in by the EmbedOpenAPI plugin), OpenAPI 3.1.0")
    func sameDocument() throws {
        let file = try String(contentsOf: Self.docs, encoding: .utf8)
        #expect(OpenAPIDocument.json == file || OpenAPIDocument.json + "\n" == file, "the embedded document is not docs/openapi.json: rebuild")
        let embedded = try JSONDecoder().decode(JSON.self, from: Data(OpenAPIDocument.json.utf8))
        #expect(embedded["openapi"]?.string == "3.1.0")
    }

    @Test("every /v1 operation needs the bearer token and documents 401; the open routes need none")
    func security() throws {
        let doc = try JSONDecoder().decode(JSON.self, from: Data(OpenAPIDocument.json.utf8))
        guard case .object(let paths)? = doc["paths"] else { Issue.record("no paths"); return }
        #expect(Set(paths.keys) == ["/healthz", "/readyz", "/metrics", "/openapi.json", "/v1/recordings", "/v1/recordings/{id}",
                                    "/v1/recordings/{id}/pause", "/v1/recordings/{id}/resume", "/v1/recordings/{id}/uploads/abandon",
                                    "/v1/recordings/{id}/keys", "/v1/playbacks", "/v1/playbacks/{id}", "/v1/playbacks/{id}/pause",
                                    "/v1/playbacks/{id}/resume", "/v1/playbacks/{id}/keys", "/v1/relays", "/v1/relays/{id}",
                                    "/v1/relays/{id}/pause", "/v1/relays/{id}/resume", "/v1/relays/{id}/keys"])
        #expect(doc["security"] == nil, "no global security: the open routes take no token")
        for (path, item) in paths {
            guard case .object(let operations) = item else { continue }
            for (method, operation) in operations where method != "parameters" {
                let secured = operation["security"] == [["bearer": []]]
                #expect(secured == path.hasPrefix("/v1/"), "\(method) \(path)")
                #expect((operation["responses"]?["401"] != nil) == path.hasPrefix("/v1/"), "\(method) \(path)")
            }
        }
    }
}
