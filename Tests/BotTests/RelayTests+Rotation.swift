import Bot
import FrameCrypto
import Foundation
import Testing
import TestSupport

extension MediaScene.RelayTests {
    /// A key rotation never ends the stream: a FrameCryptor publisher moves from its key index 0
    /// to index 1 mid-stream (as PQSRTC rotates a sender key); the relay, holding both, opens
    /// every frame before and after, in one connection, and nginx gets the tone throughout.
    @Test func aKeyRotationMidStreamLosesNothing() async throws {
        let dir = try Scene.tempDirectory("relay-rotation")
        let source = try await RelayCase.source(in: dir)
        let port = try RelayServers.freePort()
        let nginx = try await RelayServers.nginxRTMP(port: port, in: dir)
        let room = try await Scene.createRoom()
        let (k0, k1) = (MediaScene.FrameFormatTests.material(), MediaScene.FrameFormatTests.material())
        let (sending, opening) = (MediaScene.FrameFormatTests.store(), MediaScene.FrameFormatTests.store())
        for (index, k) in [(UInt64(0), k0), (1, k1)] {
            try sending.set(participant: "7", index: index, material: k)
            try opening.set(participant: "7", index: index, material: k)
        }
        let sealing = IndexedProtection(store: sending, sender: "7")
        let url = "rtmp://127.0.0.1:\(port)/live/rotation", got = dir.appendingPathComponent("got.flv")
        let relay = Relay(config: try Scene.config(room: room, display: "90:Relay", protection: .indexed(IndexedProtection(store: opening, sender: ""))),
                          destination: try RelayDestination(url), participant: "7", duration: .seconds(16))
        let relaying = Task { try await relay.run() }
        try await Task.sleep(for: .seconds(1))
        let player = Task { try await Player(config: try Scene.config(room: room, display: "7:Publisher", protection: .indexed(sealing)), file: source.path).run() }
        async let read = RelayCase.readBack(url, seconds: 10, to: got)
        // 6 s after the publisher started: its next frames are sealed with index 1.
        try await Task.sleep(for: .seconds(6))
        sealing.sealing.set(1)
        let report = try await relaying.value
        player.cancel()
        _ = try? await player.value
        let wasRead = await read
        await nginx.stop()

        print("relay across a key rotation: audio \(report.audio.opened) of \(report.audio.received) opened, video \(report.video.opened) of \(report.video.received); "
              + "outputs \(report.attempts), failures \(report.failures)")
        #expect(wasRead, "nothing came back from nginx")
        #expect(report.audio.received > 500 && report.audio.opened == report.audio.received && report.audio.droppedTotal == 0, "\(report.audio)")
        #expect(report.video.received > 100 && report.video.opened == report.video.received && report.video.droppedTotal == 0, "\(report.video)")
        #expect(report.attempts == 1 && report.failures == 0 && report.incomplete == nil, "one connection: \(report.attempts) outputs")
        // The tone in every second read back, across the rotation.
        let tones = CompositeCase.tones(try await RelayCase.audioSamples(got), [440])
        #expect(tones.count >= 8 && tones.allSatisfy { $0 == [440] }, "\(tones)")
    }
}
