import Bot
import Foundation
@testable import Service
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The pure parts of issue 25's fixes: Janus URLs as the WebSocket client would read them,
/// paths below a root, overlapping folders, errors without a connection's reason.
@Suite struct ConfinementUnitTests {
    @Test("Janus URLs: one normal form (IPv6 literals in RFC 5952 form), and none for a userinfo, an IPv6 zone, another scheme or a bad port")
    func janusURLs() throws {
        #expect(JanusAllowList.normal("ws://Janus.example:80/") == "ws://janus.example:80/")
        #expect(JanusAllowList.normal("ws://janus.example") == "ws://janus.example:80/")
        #expect(JanusAllowList.normal("wss://janus.example/janus") == "wss://janus.example:443/janus")
        #expect(JanusAllowList.normal("ws://127.0.0.1:8188") == "ws://127.0.0.1:8188/")
        #expect(JanusAllowList.normal("ws://[::1]:8188") == "ws://[::1]:8188/")
        #expect(JanusAllowList.normal("ws://[0:0:0:0:0:0:0:1]") == "ws://[::1]:80/")
        #expect(JanusAllowList.normal("wss://[2001:DB8:0::1]/janus") == "wss://[2001:db8::1]:443/janus")
        for bad in ["ws://user:pw@janus.example", "ws://user@janus.example:8188", "ws://[fe80::1%25eth0]:8188", "ws://[::1x]", "ws://[]:1", "http://janus.example",
                    "ws://:8188", "ws://janus.example:0", "ws://janus.example:70000", "ws://janus.example/?x=1", "ws://janus.example/#f",
                    "ws://jan us", "janus.example:8188"] {
            #expect(JanusAllowList.normal(bad) == nil, "\(bad)")
        }
        let list = try JanusAllowList(["ws://127.0.0.1:8188", "wss://janus.example", "ws://[::1]:8188"])
        #expect(list.allows("ws://127.0.0.1:8188/") && list.allows("wss://JANUS.example:443"))
        #expect(list.allows("ws://[0:0:0:0:0:0:0:1]:8188") && list.allows("ws://[0::1]:8188/"))
        #expect(!list.allows("ws://127.0.0.1:8189") && !list.allows("ws://janus.example") && !list.allows("ws://x@127.0.0.1:8188"))
        #expect(!list.allows("ws://[::2]:8188") && !list.allows("ws://[::1]:8189") && !list.allows("ws://[::ffff:127.0.0.1]:8188"))
        #expect(throws: ServeError.self) { try JanusAllowList(["ws://u:p@janus.example"]) }
    }

    @Test("paths below a root: relative or absolute inside it, never `..`, never outside, never the root itself")
    func rootComponents() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-root-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: dir) }
        let root = try Root(dir.path, use: .output, create: true)
        #expect(try root.components("a/b", field: "out") == ["a", "b"])
        #expect(try root.components("./a//b/", field: "out") == ["a", "b"])
        #expect(try root.components(root.path + "/a", field: "out") == ["a"])
        #expect(try root.components(dir.path + "/a", field: "out") == ["a"])
        #expect(root.canonical(["a", "b"]) == root.path + "/a/b")
        for (bad, status) in [("../x", 403), ("a/../../x", 403), ("a/..", 403), ("/etc/passwd", 403), (root.path + "x/a", 403),
                              (root.path, 400), (".", 400), ("", 400), ("a\0b", 400)] {
            #expect(throws: RequestProblem.self, "\(bad)") { try root.components(bad, field: "out") }
            do { _ = try root.components(bad, field: "out") } catch {
                #expect(error.status == status && error.message.hasPrefix("out:"), "\(bad): \(error.message)")
            }
        }
        #expect(throws: ServeError.self) { try Root(dir.appendingPathComponent("missing/sub").path, use: .media, create: true) }
    }

    @Test("a playback's file is read through what its check opened: its name swapped afterwards for a symlink out of the media root still reads the checked file")
    func playbackFileHeldFromItsCheck() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-held-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: dir) }
        let media = dir.appendingPathComponent("media"), outside = dir.appendingPathComponent("outside")
        for d in [media, outside] { try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true) }
        try Data("the file the check passed\n".utf8).write(to: media.appendingPathComponent("tone.opus"))
        try Data("a secret outside the root\n".utf8).write(to: outside.appendingPathComponent("secret"))
        let roots = Roots(output: try Root(dir.appendingPathComponent("out").path, use: .output, create: true),
                          media: try Root(media.path, use: .media, create: false))
        let spec = JobSpec(kind: .playback, room: 1, janus: nil, key: .none, out: nil, mix: nil, file: "tone.opus", display: nil, loop: false, durationSeconds: nil)
        let prepared = try JobPreparation(spec, paths: try JobPaths(spec, roots: roots), roots: roots, fresh: true)
        let held = try #require(prepared.media)

        // Between the check and GStreamer's open, the name now leads out of the root.
        try FileManager.default.removeItem(at: media.appendingPathComponent("tone.opus"))
        try FileManager.default.createSymbolicLink(at: media.appendingPathComponent("tone.opus"), withDestinationURL: outside.appendingPathComponent("secret"))
        #expect(String(decoding: try Data(contentsOf: URL(fileURLWithPath: held.path)), as: UTF8.self) == "the file the check passed\n")
        #expect(String(decoding: try Data(contentsOf: URL(fileURLWithPath: held.path)), as: UTF8.self) == "the file the check passed\n", "read again (a loop, a rejoin)")
    }

    @Test("overlap: the same folder, one inside the other; not two beside each other sharing a prefix")
    func overlap() {
        #expect(JobPaths.overlap("/r/a", "/r/a"))
        #expect(JobPaths.overlap("/r/a", "/r/a/b") && JobPaths.overlap("/r/a/b", "/r/a"))
        #expect(!JobPaths.overlap("/r/a", "/r/ab") && !JobPaths.overlap("/r/a/b", "/r/a/c"))
    }

    @Test("a failed connection's error says Janus could not be reached, never why")
    func connectReasonLeftOut() {
        let e = "Janus unreachable at ws://10.0.0.1:22 (Connection refused (errno: 111)): is it running, and is the URL ws://HOST:PORT?"
        #expect(JobStatus.withoutConnectReason(e) == "Janus at ws://10.0.0.1:22 could not be reached")
        #expect(JobStatus.withoutConnectReason("ws://h:1 unreachable: no answer to the WebSocket handshake") == "ws://h:1 could not be reached")
        #expect(JobStatus.withoutConnectReason("room 5 does not exist") == "room 5 does not exist")
    }

    @Test("a root others may write in, or another user owns, is said to be weak; one only the service writes is not")
    func weakRoots() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-roots-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(try Root(dir.path, use: .output, create: false).weakness == nil)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: dir.path)
        let weak = try Root(dir.path, use: .output, create: false).weakness
        #expect(weak?.contains("writable by its group or others") == true, "\(weak ?? "nil")")
    }

    @Test("a recording's folders are held from their check: written through /proc/self/fd/N after their names lead out of the root, errors shown with the checked paths")
    func heldOutputs() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-held-\(UUID().uuidString.prefix(8))")
        let outside = dir.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: outside.appendingPathComponent("a"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let root = try Root(dir.appendingPathComponent("root").path, use: .output, create: true)
        let roots = Roots(output: root, media: root)
        let spec = try JobSpec.parse(Data(#"{"room": 1, "key": {"none": true}, "out": "calls/a", "mix": "calls/mix.opus"}"#.utf8), kind: .recording)
        let prepared = try JobPreparation(spec, paths: try JobPaths(spec, roots: roots), roots: roots, fresh: true)
        let outputs = try #require(prepared.outputs)
        #expect(outputs.folder.shown.path == root.path + "/calls/a" && outputs.folder.access.path.hasPrefix("/proc/self/fd/"))
        #expect(outputs.mix?.shown.path == root.path + "/calls/mix.opus")

        // `calls` swapped for a symlink out of the root after the check.
        let calls = URL(fileURLWithPath: root.path).appendingPathComponent("calls")
        let moved = URL(fileURLWithPath: root.path).appendingPathComponent("moved")
        #expect(rename(calls.path, moved.path) == 0 && symlink(outside.path, calls.path) == 0)
        #expect(FileManager.default.createFile(atPath: outputs.folder.file("1-x.opus").access.path, contents: Data("x".utf8)))
        #expect(FileManager.default.fileExists(atPath: moved.appendingPathComponent("a/1-x.opus").path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.appendingPathComponent("a").path).isEmpty)
        let mixSize = try FileManager.default.attributesOfItem(atPath: moved.appendingPathComponent("mix.opus").path)[.size] as? Int
        #expect(mixSize == 0, "the mix was created, empty, where it was checked")

        // What people see names the folder as checked; fd 1 is not the start of fd 12.
        let access = outputs.folder.access.path
        #expect(outputs.folder.showing("cannot open \"\(access)/1-x.opus\" for writing") == "cannot open \"\(root.path)/calls/a/1-x.opus\" for writing")
        #expect(outputs.folder.showing("\(access)7/x") == "\(access)7/x")
        #expect(outputs.folder.access(ofShown: root.path + "/calls/a/1-x.opus")?.path == access + "/1-x.opus")
        #expect(outputs.folder.access(ofShown: root.path + "/calls/ab") == nil)
        // Undone through the held folder: the mix is removed where it was made, not at its name.
        prepared.discard()
        #expect(!FileManager.default.fileExists(atPath: moved.appendingPathComponent("mix.opus").path))

        // A restart or a failover opens the folders again with the same walk: the symlink is refused.
        do throws(RequestProblem) {
            _ = try JobPreparation(spec, paths: try JobPaths(spec, roots: roots), roots: roots, fresh: false)
            Issue.record("a job resumed through a swapped folder was prepared")
        } catch {
            #expect(error.status == 403 && error.message.hasPrefix("out:"), "\(error.message)")
        }
    }
}
