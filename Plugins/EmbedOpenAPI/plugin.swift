import Foundation
import PackagePlugin

/// Compiles docs/openapi.json into the Service module (`OpenAPIDocument.json`), so the document
/// has one source: the file schemathesis and readers use is the one `/openapi.json` serves.
@main
struct EmbedOpenAPI: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let input = context.package.directoryURL.appending(path: "docs/openapi.json")
        let output = context.pluginWorkDirectoryURL.appending(path: "OpenAPIDocument+JSON.swift")
        return [.buildCommand(
            displayName: "Embedding docs/openapi.json in \(target.name)",
            executable: try context.tool(named: "embed-text").url,
            arguments: [input.path, output.path, "OpenAPIDocument", "json"],
            inputFiles: [input], outputFiles: [output])]
    }
}
