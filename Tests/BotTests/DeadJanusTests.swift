import Bot
import FrameCrypto
import Foundation
import Janus
import Logging
import Testing
import TestSupport

extension MediaScene {
    /// A Janus the test stops mid-call and never restarts: the bots try to come back for their
    /// rejoin timeout, then stop with a clear error and keep what was recorded.
    @Suite struct DeadJanusTests {
        @Test func janusDyingMidCallKeepsTheRecording() async throws {
            let dir = try Scene.tempDirectory("dead")
            try await OwnJanus.with(port: 8189, in: dir) { janus in
                let url = janus.url

                let session = try await JanusSession.connect(url: url, logger: Scene.logger)
                let room = try await VideoRoom.createRoom(try await session.attach(plugin: VideoRoom.plugin))
                await session.close()

                let ring = KeyRing(current: .random())
                let tone = try await Audio.tone(440, seconds: 20, in: dir)
                let out = dir.appendingPathComponent("rec")
                func config(_ display: String) throws -> BotConfig {
                    var c = try Scene.config(room: room, display: display, protection: .e2ee(ring))
                    c.janusURL = url
                    c.rejoinTimeout = .seconds(2)
                    return c
                }
                let recorder = Task { try await Recorder(config: try config("9:Rec"), directory: out).run() }
                try await Task.sleep(for: .seconds(1))
                let player = Task { try await Player(config: try config("4:Speaker"), file: tone.path).run() }
                try await Task.sleep(for: .seconds(4))
                await janus.stop()

                // Both stop on their own after the 2 s rejoin timeout, long before the 20 s file would end them.
                let clock = ContinuousClock(), t0 = clock.now
                await #expect(throws: BotError.self) { _ = try await player.value }
                await #expect {
                    _ = try await recorder.value
                } throws: { error in
                    // The last attempt's reason: the connection refused.
                    (error as? BotError)?.janusError?.isConnectionProblem == true
                }
                let took = clock.now - t0
                // Not before the rejoin timeout; and before the file would have ended them (15 s
                // after the stop): a bound a loaded machine does not reach.
                #expect(took >= .seconds(2) && took < .seconds(15), "gave up on the dead Janus after \(took)")

                let manifest = try RecordingManifest.read(from: out)
                #expect(manifest.ended != nil, "the manifest was finished")
                let feed = try #require(manifest.feeds.first)
                let samples = try await Audio.decode(out.appendingPathComponent(feed.file))
                #expect(Double(samples.count) / 48000 >= 2.5, "what was recorded before the crash is kept")
                let f = try #require(Audio.dominantFrequency(samples))
                #expect(abs(f - 440) <= 440 * 0.02)
            }
        }

        /// Stopped (SIGTERM cancels the run) while it is still trying to reach a Janus that is
        /// gone: the reconnection stops at once, and the files, the mix and the manifest are final.
        @Test func stoppingWhileRejoiningFinishesEveryFile() async throws {
            let dir = try Scene.tempDirectory("dead-stop")
            try await OwnJanus.with(port: 8196, in: dir) { janus in
                let session = try await JanusSession.connect(url: janus.url, logger: Scene.logger)
                let room = try await VideoRoom.createRoom(try await session.attach(plugin: VideoRoom.plugin))
                await session.close()
                let ring = KeyRing(current: .random())
                let tone = try await Audio.tone(440, seconds: 20, in: dir)
                let out = dir.appendingPathComponent("rec")
                func config(_ display: String) throws -> BotConfig {
                    var c = try Scene.config(room: room, display: display, protection: .e2ee(ring))
                    c.janusURL = janus.url
                    c.rejoinTimeout = .seconds(60)
                    return c
                }
                let recorder = Task { try await Recorder(config: try config("9:Rec"), directory: out, mixFile: dir.appendingPathComponent("mix.ogg")).run() }
                try await Task.sleep(for: .seconds(1))
                let player = Task { try await Player(config: try config("4:Speaker"), file: tone.path).run() }
                try await Task.sleep(for: .seconds(4))
                await janus.stop()
                try await Task.sleep(for: .seconds(2))  // reconnecting: refused, again and again

                let clock = ContinuousClock(), t0 = clock.now
                recorder.cancel()
                player.cancel()
                _ = try? await recorder.value
                _ = try? await player.value
                let took = clock.now - t0
                // Far inside the 60 s rejoin window it would otherwise have waited out.
                #expect(took < .seconds(30), "a stop while rejoining took \(took)")

                let manifest = try RecordingManifest.read(from: out)
                #expect(manifest.ended != nil, "the manifest is final")
                #expect(manifest.reconnection.connectionDrops == 1 && manifest.reconnection.rejoins == 0, "\(manifest.reconnection)")
                #expect(manifest.gaps.allSatisfy { $0.end != nil }, "an outage listed is closed: \(manifest.gaps)")
                let feed = try #require(manifest.feeds.first)
                let samples = try await Audio.decode(out.appendingPathComponent(feed.file))
                #expect(Double(samples.count) / 48000 >= 2.5, "what was recorded before the loss plays")
                let mix = try await Audio.decode(dir.appendingPathComponent("mix.ogg"))
                #expect(Double(mix.count) / 48000 >= 5, "the mix went on through the outage until the stop: \(Double(mix.count) / 48000) s")
            }
        }
    }
}

extension MediaScene {
    @Suite struct APISecretTests {
        @Test func apiSecretIsSentAndRequired() async throws {
            try await OwnJanus.with(port: 8190, in: try Scene.tempDirectory("secret"), apiSecret: "s3cret-for-test") { janus in
                await #expect {
                    _ = try await JanusSession.connect(url: janus.url, logger: Scene.logger)
                } throws: { error in
                    guard (error as? JanusError)?.janusCode == 403 else { return false }
                    return String(describing: error).contains("--api-secret")
                }
                let session = try await JanusSession.connect(url: janus.url, options: .init(apiSecret: "s3cret-for-test"), logger: Scene.logger)
                let handle = try await session.attach(plugin: VideoRoom.plugin)
                _ = try await VideoRoom.createRoom(handle)
                await session.close()
            }
        }

        /// Issue 44: `--api-secret` is in every user's `ps`; a 0600 file or the environment is not.
        @Test("the API secret from a 0600 file or SFUBOT_JANUS_API_SECRET reaches Janus; a file others can read is refused")
        func apiSecretFromFileOrEnvironment() async throws {
            let dir = try Scene.tempDirectory("secret-file")
            try await OwnJanus.with(port: 8191, in: dir, apiSecret: "s3cret-for-test") { janus in
                let file = dir.appendingPathComponent("api-secret")
                try Data("s3cret-for-test\n".utf8).write(to: file)
                func create(_ extra: [String], environment: [String: String] = [:]) async throws -> ChildProcess.Finished {
                    var env = ProcessInfo.processInfo.environment
                    env.removeValue(forKey: "SFUBOT_JANUS_API_SECRET")
                    env.merge(environment) { $1 }
                    return try await ChildProcess(SfubotProcess.binary, ["room", "create", "--janus", janus.url] + extra, environment: env).finished()
                }
                #expect(chmod(file.path, 0o644) == 0)
                let readable = try await create(["--api-secret-file", file.path])
                #expect(readable.status == 64 && readable.errText.contains("--api-secret-file"), "\(readable.status): \(readable.errText)")
                #expect(!readable.errText.contains("s3cret"), "the secret is never shown")

                #expect(chmod(file.path, 0o600) == 0)
                let byFile = try await create(["--api-secret-file", file.path])
                #expect(byFile.status == 0 && Int64(byFile.outText.trimmingCharacters(in: .whitespacesAndNewlines)) != nil, "\(byFile.status): \(byFile.errText)")
                let byEnvironment = try await create([], environment: ["SFUBOT_JANUS_API_SECRET": "s3cret-for-test"])
                #expect(byEnvironment.status == 0, "\(byEnvironment.status): \(byEnvironment.errText)")
                let without = try await create([])
                #expect(without.status != 0 && without.errText.contains("--api-secret"), "\(without.status): \(without.errText)")
                let both = try await create(["--api-secret", "x", "--api-secret-file", file.path])
                #expect(both.status == 64, "\(both.status): \(both.errText)")
            }
        }
    }
}
