import Foundation
import Testing
import TestSupport

extension MediaScene.RelayFromTests {
    /// `--from rtmps://` with `--tls-ca-file`: ffmpeg pushes into nginx-rtmp, nginx's stream
    /// module serves it over TLS with the test's own certificate, the relay reads it through
    /// TLS and publishes it sealed: the recorder with the key opens its audio and video. A
    /// second relay of the same source without the CA refuses the certificate and says so.
    @Test("RTMPS in: read through TLS with --tls-ca-file, published sealed, opened by the recorder; without the CA the certificate is refused")
    func rtmpsSourceWithTheCA() async throws {
        let dir = try Scene.tempDirectory("relay-from-rtmps")
        let ca = try await OwnCoturn.selfSigned("rtmps", for: ["127.0.0.1"], in: dir)
        let (port, tlsPort) = (try RelayServers.freePort(), try RelayServers.freePort())
        let nginx = try await RelayServers.nginxRTMP(port: port, tls: (tlsPort, ca.cert, ca.key), in: dir)
        defer { Task { await nginx.stop() } }
        let room = try await Scene.createRoom()
        let metrics = try RelayServers.freePort()
        let recorder = try SfubotProcess.start(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", RelayCase.key,
                                                "--out", dir.appendingPathComponent("rec").path, "--metrics-port", "\(metrics)"])
        let source = try RelayFromCase.push(to: "rtmp://127.0.0.1:\(port)/live/source", format: "flv")
        func relay(_ display: String, _ extra: [String]) throws -> ChildProcess {
            try SfubotProcess.start(["relay", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", RelayCase.key,
                                     "--from", "rtmps://127.0.0.1:\(tlsPort)/live/source", "--display", display, "--duration", "30"] + extra)
        }
        let trusted = try relay("9:Studio", ["--tls-ca-file", ca.cert])
        let untrusted = try relay("10:Untrusted", [])
        let opened = await eventually(within: 30) {
            let text = await MediaScene.MetricsCLITests.scrape(metrics) ?? ""
            let audio = PrometheusText.value(#"sfubot_frames_opened_total{kind="audio",format="ecall"}"#, in: text) ?? 0
            let video = PrometheusText.value(#"sfubot_frames_opened_total{kind="video",format="ecall"}"#, in: text) ?? 0
            return audio >= 150 && video >= 40
        }
        for p in [trusted, untrusted] { p.signal(SIGTERM) }
        let (ran, ranUntrusted) = (await trusted.finished(), await untrusted.finished())
        source.signal(SIGKILL)
        _ = await source.exit()
        recorder.signal(SIGTERM)
        _ = await recorder.finished()
        #expect(opened && ran.status == 0, "through TLS: \(ran.status): \(ran.errText.suffix(2000))")
        #expect(ranUntrusted.errText.contains("TLS certificate"), "the refused certificate is said: \(ranUntrusted.errText.suffix(2000))")
    }
}
