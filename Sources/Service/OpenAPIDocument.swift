/// The API's OpenAPI 3.1 document, served at `/openapi.json`. Its one source is
/// docs/openapi.json: the EmbedOpenAPI build plugin compiles that file in as `json`.
enum OpenAPIDocument {}
