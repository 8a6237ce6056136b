import Foundation
import Testing
import TestSupport

/// docs/architecture.md's module map is Package.swift's, and Package.swift's is the code's: every
/// target has its row, its row lists exactly the package's own targets it depends on (and the
/// plugins it uses), every target that ships is drawn in the diagram, and each target's files
/// import exactly the package's own targets it declares. Read from `swift package dump-package`.
@Suite struct ArchitectureMapTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct Target {
        let name: String
        let type: String
        /// Where its files are: Package.swift's `path`, else the folder SwiftPM looks in.
        let folder: URL
        /// Target dependencies (by name), then build plugins used.
        let dependencies: Set<String>
        let plugins: Set<String>
        var edges: Set<String> { dependencies.union(plugins) }
    }

    /// The manifest as SwiftPM reads it (a scratch folder of its own: the running build holds .build's lock).
    static func targets() async throws -> [Target] {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-dump-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let run = try await ChildProcess(URL(fileURLWithPath: "/usr/bin/env"),
                                         ["swift", "package", "dump-package", "--package-path", root.path, "--scratch-path", scratch.path]).finished()
        #expect(run.status == 0, "\(run.errText)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(run.outText.utf8)) as? [String: Any])
        let list = try #require(json["targets"] as? [[String: Any]])
        return list.map { t in
            var dependencies = Set<String>(), plugins = Set<String>()
            for dep in t["dependencies"] as? [[String: Any]] ?? [] {
                for kind in ["byName", "target"] { if let v = dep[kind] as? [Any], let n = v.first as? String { dependencies.insert(n) } }
            }
            for use in t["pluginUsages"] as? [[String: Any]] ?? [] {
                if let v = use["plugin"] as? [Any], let n = v.first as? String { plugins.insert(n) }
            }
            let name = t["name"] as? String ?? "", type = t["type"] as? String ?? ""
            let base = ["test": "Tests", "plugin": "Plugins"][type] ?? "Sources"
            let folder = root.appendingPathComponent(t["path"] as? String ?? "\(base)/\(name)")
            return Target(name: name, type: type, folder: folder, dependencies: dependencies, plugins: plugins)
        }
    }

    /// The "Modules" section: its table rows (first cell's backticked name → third cell) and its diagram.
    static func map() throws -> (rows: [String: String], diagram: String) {
        let text = try String(contentsOf: root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let start = try #require(text.range(of: "## Modules and what each may depend on"))
        let rest = text[start.upperBound...]
        let section = rest[..<(rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex)]
        var rows: [String: String] = [:]
        for line in section.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4 else { continue }
            rows[cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = cells[3]
        }
        let fences = section.components(separatedBy: "```")
        return (rows, fences.count > 1 ? fences[1] : "")
    }

    /// Regular files under `folder` with one of `extensions`, recursively.
    static func files(under folder: URL, extensions: Set<String>) -> [URL] {
        let all = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey])?.compactMap { $0 as? URL } ?? []
        return all.filter { extensions.contains($0.pathExtension) && (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true }
    }

    /// The modules a Swift file imports, in every form: `import X`, with an access level
    /// (`public`, `package`, `internal` …), with attributes (`@testable`, `@_implementationOnly`,
    /// `@preconcurrency`, `@_spi(…)`), and of one declaration (`import struct X.Y`).
    static func imports(of file: URL) throws -> Set<String> {
        let pattern = try Regex(#"^\s*(?:@[A-Za-z_]+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+(?:(?:typealias|struct|class|enum|protocol|let|var|func)\s+)?([A-Za-z_][A-Za-z0-9_]*)"#)
        var modules = Set<String>()
        for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
            if let match = try pattern.prefixMatch(in: line), let module = match.output[1].substring { modules.insert(String(module)) }
        }
        return modules
    }

    @Test("every target of Package.swift has a row in docs/architecture.md listing exactly its edges to the package's own targets")
    func tableMatchesManifest() async throws {
        let targets = try await Self.targets()
        let names = Set(targets.map(\.name))
        let (rows, _) = try Self.map()
        #expect(targets.count > 20)
        for t in targets {
            guard let deps = rows[t.name] else { Issue.record("docs/architecture.md has no row for \(t.name)"); continue }
            let listed = Set(deps.components(separatedBy: CharacterSet(charactersIn: ",;()` ")).filter { names.contains($0) })
            #expect(listed == t.edges, "\(t.name): the doc lists \(listed.sorted()), Package.swift has \(t.edges.sorted())")
        }
        for name in rows.keys where !names.contains(name) { Issue.record("docs/architecture.md has a row for \(name), which Package.swift does not declare") }
    }

    /// A declared edge nothing imports is a wall drawn where there is none; an import of a
    /// target not declared compiles (the target is reached through another) but crosses a wall
    /// the map does not show. C targets are not read (an `#include` is not an edge), nor plugins
    /// (a build tool is run, not imported).
    @Test("each target's Swift files import exactly the package's own targets Package.swift declares for it")
    func importsMatchManifest() async throws {
        let targets = try await Self.targets()
        let names = Set(targets.map(\.name))
        var read = 0
        for t in targets where t.type != "plugin" && t.type != "system" {
            let files = Self.files(under: t.folder, extensions: ["swift"])
            guard !files.isEmpty else { continue }
            read += 1
            var imported = Set<String>()
            for file in files { imported.formUnion(try Self.imports(of: file)) }
            imported.formIntersection(names)
            let declared = t.dependencies.intersection(names)
            for unused in declared.subtracting(imported).sorted() {
                Issue.record("\(t.name) declares \(unused) in Package.swift but none of its files imports it: drop the edge (and from docs/architecture.md)")
            }
            for undeclared in imported.subtracting(declared).sorted() {
                Issue.record("\(t.name) imports \(undeclared), which Package.swift does not declare for it: declare it (and in docs/architecture.md) or drop the import")
            }
        }
        #expect(read > 25, "read the imports of \(read) targets")
    }

    @Test("every target that is not a test is drawn in the diagram")
    func diagramNamesEveryTarget() async throws {
        let (_, diagram) = try Self.map()
        let words = Set(diagram.components(separatedBy: CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-_")).inverted))
        for t in try await Self.targets() where t.type != "test" && t.name != "TestSupport" {
            #expect(words.contains(t.name), "the diagram does not show \(t.name)")
        }
    }

    /// Small files (STYLE.md): a reader takes one in at a glance. Literal documents and the
    /// tests' scripts and pages count too.
    @Test("no file under Sources, Tests or Plugins is over 300 lines", arguments: [("Sources", 100), ("Tests", 100), ("Plugins", 1)])
    func filesStaySmall(folder: String, atLeast: Int) throws {
        let top = Self.root.appendingPathComponent(folder)
        var read = 0
        for file in Self.files(under: top, extensions: ["swift", "c", "h", "json", "md", "py", "js", "html", "sh"]) {
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).count - 1
            read += 1
            #expect(lines <= 300, "\(file.path.dropFirst(top.path.count + 1)) has \(lines) lines")
        }
        #expect(read >= atLeast, "read \(read) files under \(top.path)")
    }
}
