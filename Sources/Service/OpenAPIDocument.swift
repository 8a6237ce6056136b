/// The API's OpenAPI 3.1 document, served at `/openapi.json`; docs/openapi.json is the same
/// text (a test compares them).
enum OpenAPIDocument {
    static let json = #"{"openapi": "3.1.0", "info": {"title": "sfubot serve", "version": "1"}, "paths": {}}"#
}
