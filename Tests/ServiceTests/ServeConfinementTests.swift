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
            _ = FileManager.default.createFile(atPath: s.victim.path, contents: Data("another job's recording\n".utf8), attributes: [.posixPermissions: 0o644])
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
        _ = FileManager.default.createFile(atPath: existing.path, contents: Data("an earlier mix\n".utf8), attributes: [.posixPermissions: 0o644])
        try FileManager.default.createDirectory(at: s.outRoot.appendingPathComponent("earlier"), withIntermediateDirectories: true)
        let earlierManifest = s.outRoot.appendingPathComponent("earlier/manifest.json")
        _ = FileManager.default.createFile(atPath: earlierManifest.path, contents: Data("{}".utf8), attributes: [.posixPermissions: 0o600])
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

    @Test("a recording's folder and its mix's folder swapped for symlinks out of the root right after the 201: written where the check opened them, nothing outside, no /proc path shown")
    func swappedFolderIsNotFollowed() async throws {
        let room = try await Scene.createRoom()
        let s = try Scene25.make("serve-swap")
        let tone = try await Audio.tone(440, seconds: 3, in: s.mediaRoot)
        // Where a writer by name would land after the swap: the same names, outside the root.
        for name in ["a", "m"] { try FileManager.default.createDirectory(at: s.outside.appendingPathComponent(name), withIntermediateDirectories: true) }
        let serve = try await ServeProcess.start(port: 18498, in: s.dir, outputRoot: s.outRoot, mediaRoot: s.mediaRoot)
        defer { serve.process.signal(SIGKILL) }
        let janusPort = try #require(URL(string: Scene.janusURL!)?.port)

        // The order is made certain, not hoped for: with Janus's port held (its SYNs dropped),
        // the recorder cannot join, and it writes manifest.json and its tracks only once joined.
        // So every file of the recording is written after the swap below.
        try await Faults.holdTCP(port: janusPort)
        let rec: ServeProcess.Answer
        do {
            rec = try await serve.request("POST", "/v1/recordings", json: ["room": room, "key": ["none": true], "out": "calls/a", "mix": "mixes/m/mix.opus"])
        } catch {
            try await Faults.releaseTCP(port: janusPort)
            throw error
        }
        let calls = s.outRoot.appendingPathComponent("calls"), mixes = s.outRoot.appendingPathComponent("mixes")
        let movedCalls = s.outRoot.appendingPathComponent("calls-moved"), movedMixes = s.outRoot.appendingPathComponent("mixes-moved")
        // The swap: each checked component renamed away (a descriptor held on a folder follows
        // it) and a symlink out of the root put at its name.
        let swapped = rename(calls.path, movedCalls.path) == 0 && symlink(s.outside.path, calls.path) == 0
            && rename(mixes.path, movedMixes.path) == 0 && symlink(s.outside.path, mixes.path) == 0
        let atSwap = (try? FileManager.default.contentsOfDirectory(atPath: movedCalls.appendingPathComponent("a").path)) ?? ["?"]
        let mixAtSwap = (try? FileManager.default.attributesOfItem(atPath: movedMixes.appendingPathComponent("m/mix.opus").path)[.size] as? Int) ?? -1
        let stateAtSwap = try? await serve.request("GET", "/v1/recordings").list().first?["state"] as? String
        try await Faults.releaseTCP(port: janusPort)
        #expect(rec.status == 201, "\(rec.text)")
        let id = try #require(try rec.json()["id"] as? String)
        print("serve swap: at the swap the job was \(stateAtSwap ?? "?"), its folder held \(atSwap), its mix \(mixAtSwap) bytes")
        try #require(swapped, "the swap itself failed: errno \(errno)")
        // The manifest's 1 MiB reserve is taken before joining (a disk without room is refused
        // at once); the recording's own files come only once joined.
        try #require(atSwap.filter { $0 != ".manifest.reserve" }.isEmpty && mixAtSwap == 0 && stateAtSwap == "starting",
                     "the recorder wrote before the swap: the race was not exercised")

        let play = try await serve.request("POST", "/v1/playbacks", json: ["room": room, "key": ["none": true], "file": tone.lastPathComponent, "loop": true, "display": "7:Tone"])
        #expect(play.status == 201, "\(play.text)")
        let running = try await serve.waitFor("/v1/recordings/\(id)") { j in
            ((j["feeds"] as? [[String: Any]]) ?? []).contains { ($0["framesOpened"] as? Int ?? 0) > 100 }
        }
        #expect(running["state"] as? String == "running", "\(running)")
        let stopped = try await serve.request("DELETE", "/v1/recordings/\(id)")
        let final = try stopped.json()
        #expect(stopped.status == 200 && final["state"] as? String == "done", "\(stopped.text)")

        // Outside the root: nothing, at either name a writer by name would have used.
        for name in ["a", "m"] {
            let there = try FileManager.default.contentsOfDirectory(atPath: s.outside.appendingPathComponent(name).path)
            #expect(there.isEmpty, "written outside the root: \(name)/\(there)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: s.outside.path).sorted() == ["a", "m", "victim.opus"])
        // What a user finds: the recording in the folder the check opened, now named calls-moved/a.
        let folder = movedCalls.appendingPathComponent("a")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        print("serve swap: the recording is in \(folder.path): \(files)")
        let track = try #require(files.first { $0.hasSuffix(".opus") }, "no track in \(files)")
        let samples = try await Audio.decode(folder.appendingPathComponent(track))
        #expect(samples.count > 48_000 && Audio.dominantFrequency(samples).map { abs($0 - 440) < 10 } == true, "\(samples.count) samples")
        let mix = try await Audio.decode(movedMixes.appendingPathComponent("m/mix.opus"))
        #expect(mix.count > 48_000, "the mix holds \(mix.count) samples")
        let manifestText = try String(contentsOf: folder.appendingPathComponent("manifest.json"), encoding: .utf8)
        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(manifestText.utf8)) as? [String: Any])
        #expect(manifest["ended"] != nil && (manifest["errors"] as? [Any])?.isEmpty != false, "\(manifestText)")
        #expect((manifest["mix"] as? String)?.hasSuffix("/recordings/mixes/m/mix.opus") == true, "the mix as the job named it: \(manifest["mix"] ?? "-")")
        #expect((final["out"] as? String)?.hasSuffix("/recordings/calls/a") == true, "\(final)")

        serve.process.signal(SIGTERM)
        #expect(await serve.process.exit(within: .seconds(30)) == 0)
        let log = await serve.process.finished().errText
        for (what, text) in [("the status", stopped.text), ("manifest.json", manifestText), ("the log", log)] {
            #expect(!text.contains("/proc/self/fd"), "\(what) shows a /proc path")
        }
        #expect(log.contains("/recordings/calls/a"), "the log names the folder as the job gave it")
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
