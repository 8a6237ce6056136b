import Foundation
import Testing
import TestSupport

/// docs/architecture.md's module map is Package.swift's: every target has its row, its row
/// lists exactly the package's own targets it depends on (and the plugins it uses), and every
/// target that ships is drawn in the diagram. Read from `swift package dump-package`.
@Suite struct ArchitectureMapTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct Target { let name: String; let type: String; let edges: Set<String> }

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
            var edges = Set<String>()
            for dep in t["dependencies"] as? [[String: Any]] ?? [] {
                for kind in ["byName", "target"] { if let v = dep[kind] as? [Any], let n = v.first as? String { edges.insert(n) } }
            }
            for use in t["pluginUsages"] as? [[String: Any]] ?? [] {
                if let v = use["plugin"] as? [Any], let n = v.first as? String { edges.insert(n) }
            }
            return Target(name: t["name"] as? String ?? "", type: t["type"] as? String ?? "", edges: edges)
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

    @Test("every target that is not a test is drawn in the diagram")
    func diagramNamesEveryTarget() async throws {
        let (_, diagram) = try Self.map()
        let words = Set(diagram.components(separatedBy: CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-_")).inverted))
        for t in try await Self.targets() where t.type != "test" && t.name != "TestSupport" {
            #expect(words.contains(t.name), "the diagram does not show \(t.name)")
        }
    }

    /// Small files (STYLE.md): a reader takes one in at a glance. Literal documents count too.
    @Test("no file under Sources is over 300 lines")
    func sourcesStaySmall() throws {
        let sources = Self.root.appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
        var read = 0
        for file in files where ["swift", "c", "h", "json", "md"].contains(file.pathExtension) {
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).count - 1
            read += 1
            #expect(lines <= 300, "\(file.path.dropFirst(sources.path.count + 1)) has \(lines) lines")
        }
        #expect(read > 100, "read \(read) files under \(sources.path)")
    }
}
