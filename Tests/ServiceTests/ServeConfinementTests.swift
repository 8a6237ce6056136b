import Foundation
import Testing
import TestSupport

/// `sfubot serve` as an attacker holding the token would try it (issue 25): paths out of the
/// roots, files it must not overwrite, folders of other jobs, a Janus of its choosing, FIFOs.
/// The service runs with --output-root and --media-root inside the test's folder; the files it
/// must not touch lie next to them.
extension MediaScene {
@Suite struct ServeConfinementTests {
    /// What a file is, to compare before and after: bytes, mode, modification time.
    struct Fingerprint: Equatable {
        var bytes: Data
        var mode: Int
        var modified: Date
        init(_ url: URL) throws {
            bytes = try Data(contentsOf: url)
            let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
            mode = (attributes[.posixPermissions] as? Int) ?? -1
            modified = (attributes[.modificationDate] as? Date) ?? .distantPast
        }
    }

    struct Scene25 {
        let dir: URL, outRoot: URL, mediaRoot: URL, outside: URL, victim: URL
        static func make(_ name: String) throws -> Scene25 {
            let dir = try Scene.tempDirectory(name)
            let s = Scene25(dir: dir, outRoot: dir.appendingPathComponent("recordings"), mediaRoot: dir.appendingPathComponent("media"),
                            outside: dir.appendingPathComponent("outside"), victim: dir.appendingPathComponent("outside/victim.opus"))
            for d in [s.outRoot, s.mediaRoot, s.outside] { try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true) }
            FileManager.default.createFile(atPath: s.victim.path, contents: Data("another job's recording\n".utf8), attributes: [.posixPermissions: 0o644])
            return s
        }
    }

    @Test("out, mix, file and key.file outside the roots (absolute, `..`, a symlink) and an existing mix are refused; every file outside stays byte for byte")
    func pathsStayInTheirRoots() async throws {
        let room = try await Scene.createRoom()
        let s = try Scene25.make("serve-roots")
        try FileManager.default.createSymbolicLink(at: s.outRoot.appendingPathComponent("escape"), withDestinationURL: s.outside)
        try FileManager.default.createSymbolicLink(at: s.mediaRoot.appendingPathComponent("escape"), withDestinationURL: s.outside)
        let existing = s.outRoot.appendingPathComponent("earlier.opus")
        FileManager.default.createFile(atPath: existing.path, contents: Data("an earlier mix\n".utf8), attributes: [.posixPermissions: 0o644])
        try FileManager.default.createDirectory(at: s.outRoot.appendingPathComponent("earlier"), withIntermediateDirectories: true)
        let earlierManifest = s.outRoot.appendingPathComponent("earlier/manifest.json")
        FileManager.default.createFile(atPath: earlierManifest.path, contents: Data("{}".utf8), attributes: [.posixPermissions: 0o600])
        let watched = [s.victim, existing, earlierManifest]
        let before = try watched.map(Fingerprint.init)
        let serve = try await ServeProcess.start(port: 18490, in: s.dir, outputRoot: s.outRoot, mediaRoot: s.mediaRoot)
        defer { serve.process.signal(SIGKILL) }

        func refused(_ kind: String, _ body: [String: Any], _ status: Int, naming field: String) async throws {
            var body = body
            body["room"] = room
            if body["key"] == nil { body["key"] = ["none": true] }
            let r = try await serve.request("POST", "/v1/\(kind)s", json: body)
            let message = (try? r.json()["error"] as? String) ?? ""
            print("serve roots: \(kind) \(body.filter { $0.key != "room" && $0.key != "key" }) → \(r.status) \(message)")
            #expect(r.status == status && message.hasPrefix(field + ":"), "\(body): \(r.text)")
        }
        try await refused("recording", ["out": s.outside.path], 403, naming: "out")
        try await refused("recording", ["out": s.outside.appendingPathComponent("new").path], 403, naming: "out")
        try await refused("recording", ["out": "a", "mix": s.victim.path], 403, naming: "mix")
        try await refused("recording", ["out": "../outside"], 403, naming: "out")
        try await refused("recording", ["out": "b", "mix": "../outside/victim.opus"], 403, naming: "mix")
        try await refused("recording", ["out": s.outRoot.path + "/../outside"], 403, naming: "out")
        try await refused("recording", ["out": "escape"], 403, naming: "out")
        try await refused("recording", ["out": "escape/sub"], 403, naming: "out")
        try await refused("recording", ["out": "c", "mix": "escape/victim.opus"], 403, naming: "mix")
        try await refused("recording", ["out": "d", "mix": "earlier.opus"], 409, naming: "mix")
        try await refused("recording", ["out": "earlier"], 409, naming: "out")
        try await refused("playback", ["file": s.victim.path], 403, naming: "file")
        try await refused("playback", ["file": "escape/victim.opus"], 403, naming: "file")
        try await refused("playback", ["file": "../outside/victim.opus"], 403, naming: "file")
        try await refused("playback", ["file": "x.opus", "key": ["file": s.victim.path]], 403, naming: "key.file")
        try await refused("playback", ["file": "x.opus", "key": ["file": "escape/victim.opus"]], 403, naming: "key.file")

        let after = try watched.map(Fingerprint.init)
        #expect(after == before, "files outside the roots and existing files are untouched")
        #expect(try FileManager.default.contentsOfDirectory(atPath: s.outside.path) == ["victim.opus"], "nothing created outside")
        #expect(try await serve.request("GET", "/v1/recordings").list().isEmpty, "no job started")
        serve.process.signal(SIGTERM)
        #expect(await serve.process.exit(within: .seconds(30)) == 0)
    }

    @Test("a recording's folder, a folder inside it, one around it, or a mix in it are refused (409) while it runs; the paths it shows are canonical")
    func foldersDoNotOverlap() async throws {
        let room = try await Scene.createRoom()
        let s = try Scene25.make("serve-overlap")
        let serve = try await ServeProcess.start(port: 18491, in: s.dir, outputRoot: s.outRoot, mediaRoot: s.mediaRoot)
        defer { serve.process.signal(SIGKILL) }
        let first = try await serve.request("POST", "/v1/recordings", json: ["room": room, "key": ["none": true], "out": "calls/a", "mix": "calls/a/mix.opus"])
        #expect(first.status == 201, "\(first.text)")
        let job = try first.json()
        let id = try #require(job["id"] as? String)
        let realRoot = try #require(URL(fileURLWithPath: s.outRoot.path).resolvingSymlinksInPath().path as String?)
        #expect((job["out"] as? String)?.hasSuffix("/recordings/calls/a") == true && (job["out"] as? String)?.hasPrefix("/") == true, "\(job) (root \(realRoot))")

        for (out, mix) in [("calls/a", nil), ("calls/./a/", nil), ("calls", nil), ("calls/a/sub", nil), ("other", "calls/a/mix2.opus"), (s.outRoot.path + "/calls/a", nil)] as [(String, String?)] {
            var body: [String: Any] = ["room": room + 1, "key": ["none": true], "out": out]
            if let mix { body["mix"] = mix }
            let r = try await serve.request("POST", "/v1/recordings", json: body)
            print("serve overlap: out \(out) mix \(mix ?? "-") → \(r.status) \(r.text)")
            #expect(r.status == 409 && r.text.contains(id), "\(out) \(mix ?? ""): \(r.text)")
        }
        let beside = try await serve.request("POST", "/v1/recordings", json: ["room": room + 1, "key": ["none": true], "out": "calls/b"])
        #expect(beside.status == 201, "a folder beside it is fine: \(beside.text)")

        // Eight requests for one new folder at once: the folder is claimed before the file work, so one wins.
        let racing = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask { try await serve.request("POST", "/v1/recordings", json: ["room": room + 2, "key": ["none": true], "out": "race"]).status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        print("serve overlap: 8 POSTs into one new folder at once → \(racing.sorted())")
        #expect(racing.filter { $0 == 201 }.count == 1 && racing.filter { $0 == 409 }.count == 7, "\(racing)")
        serve.process.signal(SIGTERM)
        #expect(await serve.process.exit(within: .seconds(30)) == 0)
    }
}
}
