import Foundation
import Testing
import TestSupport

extension MediaScene {
    /// The relay is a participant like the others: it comes back by itself when it loses Janus,
    /// and the stream it feeds stays open through the outage.
    @Suite(.enabled(if: RelayServers.missing == nil, "\(RelayServers.missing ?? "")")) struct RelayFaultTests {
        @Test("Janus SIGKILLed mid-relay and restarted 1 s later with its rooms: the relay rejoins on its own, one RTMP stream carries the tone before and after")
        func janusRestartedUnderTheRelay() async throws {
            let dir = try Scene.tempDirectory("relay-janus-restart")
            let source = try await RelayCase.source(in: dir, seconds: 32)
            let port = try RelayServers.freePort()
            let nginx = try await RelayServers.nginxRTMP(port: port, in: dir)
            defer { Task { await nginx.stop() } }
            try await OwnJanus.with(port: 8248, in: dir, reclaimTimeout: 30, rtpPorts: 12800...12899) { janus in
                let room = try await Scene.createPermanentRoom(janus.url)
                let publisher = try SfubotProcess.start(["play", source.path, "--janus", janus.url, "--room", "\(room)", "--key-hex", RelayCase.key,
                                                         "--display", "7:Publisher"])
                defer { publisher.signal(SIGKILL) }
                let to = "rtmp://127.0.0.1:\(port)/live/restart"
                let relay = try SfubotProcess.start(["relay", "--janus", janus.url, "--room", "\(room)", "--key-hex", RelayCase.key,
                                                     "--participant", "7", "--to", to, "--duration", "30"])
                // The stream is read for the whole scene: one connection, before and after.
                let got = dir.appendingPathComponent("got.flv")
                async let read = RelayCase.readBack(to, seconds: 22, to: got)
                try await Task.sleep(for: .seconds(7))
                try await janus.kill9()
                try await Task.sleep(for: .seconds(1))
                try await janus.restart()
                let cameBack = await read
                let ran = await relay.finished()
                #expect(cameBack, "nothing came back from nginx: \(ran.errText.suffix(1500))")
                #expect(ran.status == 0, "relay exited \(ran.status): \(ran.errText.suffix(2000))")
                #expect(ran.errText.contains("lost Janus") && ran.errText.contains("back in room"), "the log says it rejoined: \(ran.errText.suffix(2000))")
                #expect(ran.outText.contains("rejoins: ") && !ran.outText.contains("rejoins: 0"), "the last line counts the rejoin: \(ran.outText)")

                // The tone before the kill and again after Janus was back, in the one stream read.
                let samples = try await RelayCase.audioSamples(got)
                let second = 48000
                let windows = stride(from: 0, to: samples.count - second, by: second).map { start in
                    Audio.dominantFrequency(Array(samples[start..<(start + second)])).map { abs($0 - 440) <= 440 * 0.02 } ?? false
                }
                let toneSeconds = windows.filter { $0 }.count
                print("relay through a Janus restart: \(windows.count) s read back, \(toneSeconds) s of tone: \(windows.map { $0 ? "T" : "." }.joined())")
                #expect(windows.prefix(5).contains(true), "the tone before the kill")
                #expect(windows.suffix(5).contains(true), "the tone again after the relay came back")
                let c = RelayCase.counters(ran.outText)
                #expect(c.relayedAudio > 500 && c.failures == 0 && c.outputs == 1, "one output through the outage: \(ran.outText)")
            }
        }
    }
}
