import Bot
import FrameCrypto
import Foundation
import Testing
import TestSupport

/// `--key-log` and `--key-map` as a user runs them: the `sfubot` executable against the local Janus.
extension MediaScene {
@Suite struct KeyCLITests {
    let key = String(repeating: "cd", count: 32)

    func mode(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1) & 0o777
    }

    @Test func recordWritesItsKeyToAPrivateKeyLogWithAWarning() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("keylog-cli")
        let logFile = dir.appendingPathComponent("keys.jsonl").path
        let before = Date().timeIntervalSince1970
        let r = try await CLITests.run(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key,
                                        "--key-log", logFile, "--duration", "2", "--out", dir.appendingPathComponent("rec").path])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.contains("warning: --key-log") && r.err.contains("keys in the clear"), "\(r.err)")
        #expect(!r.err.contains(key) && !r.out.contains(key), "the key is in the log file only")
        #expect(mode(logFile) == 0o600)
        let lines = try String(contentsOfFile: logFile, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 1)
        let entry = try JSONDecoder().decode(KeyLog.Entry.self, from: Data(lines[0].utf8))
        #expect(entry.call == room && entry.key == key && entry.index == nil)
        #expect(entry.from >= before && entry.from <= Date().timeIntervalSince1970)
    }

    @Test func perSenderKeysNeedACallKey() async throws {
        let r = try await CLITests.run(["load", "--janus", Scene.janusURL!, "--room", "1", "--no-e2ee", "--per-sender-keys"])
        #expect(r.status == 64 && r.err.contains("--per-sender-keys derives"), "\(r.err)")
    }

    @Test func aKeyLogOthersCanReadIsRefused() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("keylog-open")
        let logFile = dir.appendingPathComponent("keys.jsonl").path
        #expect(FileManager.default.createFile(atPath: logFile, contents: Data(), attributes: [.posixPermissions: 0o644]))
        let r = try await CLITests.run(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key,
                                        "--key-log", logFile, "--duration", "1", "--out", dir.appendingPathComponent("rec").path])
        #expect(r.status == 65, "\(r.err)")
        #expect(r.err.contains("open to other users"), "\(r.err)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: logFile)).isEmpty, "no key written into it")
    }

    /// play seals with the newest key of its display's participant id; record opens with the
    /// map, counts the index per feed in the manifest, and logs every sender's keys.
    @Test func playAndRecordWithAKeyMap() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("keymap-cli")
        let tone = try await Audio.tone(440, seconds: 30, in: dir)
        let older = CallKey.random(), newer = CallKey.random()
        let mapFile = dir.appendingPathComponent("map.json")
        try KeyMap(senders: ["5": [1: older, 2: newer], "6": [1: CallKey.random()]]).json.write(to: mapFile)
        chmod(mapFile.path, 0o600)
        let logFile = dir.appendingPathComponent("keys.jsonl").path
        let out = dir.appendingPathComponent("rec")
        let port = try SilentListener().port
        let recorder = try CLITests.start(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-map", mapFile.path,
                                           "--key-log", logFile, "--out", out.path, "--metrics-port", "\(port)"])
        try await Task.sleep(for: .seconds(1))
        let stranger = try await CLITests.run(["play", tone.path, "--janus", Scene.janusURL!, "--room", "\(room)", "--key-map", mapFile.path,
                                               "--display", "7:Stranger"])
        #expect(stranger.status == 65 && stranger.err.contains("no key for participant \"7\""), "\(stranger.err)")
        let player = try CLITests.start(["play", tone.path, "--janus", Scene.janusURL!, "--room", "\(room)", "--key-map", mapFile.path,
                                         "--display", "5:Ann"])
        defer { if player.isRunning { player.signal(SIGKILL) } }
        // Until 100 frames were opened, however long the subscription takes on a loaded machine
        // (a fixed 3 s tone lost its first second to it once in the lanes: 95 frames of 150).
        var metrics = ""
        let opened = await eventually(within: 60) {
            metrics = await MetricsCLITests.scrape(port) ?? ""
            let lines = metrics.split(separator: "\n").filter { $0.hasPrefix("sfubot_frames_opened_total{") }
            return lines.compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.reduce(0, +) >= 100
        }
        #expect(opened, "100 frames not opened in 60 s: \(metrics)")
        #expect(player.isRunning, "the player stopped early")
        recorder.signal(SIGTERM)
        let stopped = await recorder.finished()
        #expect(stopped.status == 0, "\(stopped.errText)")
        player.signal(SIGTERM)
        _ = await player.finished()

        let manifest = try RecordingManifest.read(from: out)
        let feed = try #require(manifest.feeds.first)
        #expect(manifest.feeds.count == 1 && feed.userID == "5")
        #expect(feed.frames.opened >= 100 && feed.frames.droppedTotal == 0, "\(feed.frames)")
        #expect(feed.openedByKeyIndex == ["2": feed.frames.opened], "newest index first: \(String(describing: feed.openedByKeyIndex))")
        let text = try String(contentsOf: out.appendingPathComponent("manifest.json"), encoding: .utf8)
        #expect(text.contains("\"opened_by_key_index\""))
        // The log: each sender's keys with index and participant; the reader finds sender 5's newest.
        let logged = try KeyLog.Entries(path: logFile, call: room, participant: "5")
        #expect(logged.keys.map(\.index) == [1, 2])
        #expect(Set(logged.keys.map(\.key.exportedHex)) == [older.exportedHex, newer.exportedHex])
        #expect(try KeyLog.Entries(path: logFile, participant: "6").keys.count == 1)
    }
}
}
