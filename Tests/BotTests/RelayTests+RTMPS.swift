import Foundation
import Testing
import TestSupport

extension MediaScene.RelayTests {
    /// rtmps://: nginx's stream module terminates TLS with a certificate of the test's own CA
    /// in front of nginx-rtmp. The relay given that CA (`--tls-ca-file`) reaches it: the stream
    /// read back over plain rtmp:// holds the publisher's own H.264 and the tone. A second relay
    /// of the same call without the CA (the system's CAs, which do not know it) refuses the
    /// certificate each try: nothing is sent, the failures are counted, the stream never appears
    /// on the server, and it exits incomplete (74).
    @Test func rtmpsReachesNginxThroughTLSWithTheCAAndIsRefusedWithout() async throws {
        let dir = try Scene.tempDirectory("relay-rtmps")
        let source = try await RelayCase.source(in: dir, seconds: 16)
        let ca = try await OwnCoturn.selfSigned("rtmps", for: ["127.0.0.1"], in: dir)
        let (port, tlsPort) = (try RelayServers.freePort(), try RelayServers.freePort())
        let nginx = try await RelayServers.nginxRTMP(port: port, tls: (tlsPort, ca.cert, ca.key), in: dir)
        let room = try await Scene.createRoom()
        let publisher = try RelayCase.publisher(source, room: room)
        func relay(_ name: String, _ extra: [String]) throws -> ChildProcess {
            try SfubotProcess.start(["relay", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", RelayCase.key, "--participant", "7",
                                     "--to", "rtmps://127.0.0.1:\(tlsPort)/live/\(name)", "--duration", "14"] + extra)
        }
        let trusted = try relay("call", ["--tls-ca-file", ca.cert])
        let untrusted = try relay("refused", [])
        let got = dir.appendingPathComponent("got.flv"), refused = dir.appendingPathComponent("refused.flv")
        // The refused stream, asked for while the relays run: nginx-rtmp holds a player until
        // the stream is published, so ffmpeg gets a byte only if it ever was.
        async let readRefused = ChildProcess.run("/usr/bin/timeout", ["-s", "KILL", "12", "/usr/bin/ffmpeg", "-hide_banner", "-loglevel", "error", "-y",
                                                                      "-i", "rtmp://127.0.0.1:\(port)/live/refused", "-t", "2", "-c", "copy", refused.path])
        let read = await RelayCase.readBack("rtmp://127.0.0.1:\(port)/live/call", seconds: 6, to: got)
        let (ran, ranRefused) = (await trusted.finished(), await untrusted.finished())
        _ = try await readRefused
        publisher.signal(SIGKILL)
        await nginx.stop()

        #expect(read, "nothing came back from nginx through TLS: \(ran.errText.suffix(1500))")
        try await Self.checkStream(got, source: source, ran: ran)

        let refusedBytes = (try? FileManager.default.attributesOfItem(atPath: refused.path)[.size] as? Int) ?? 0
        #expect(refusedBytes == 0, "\(refusedBytes) bytes of a stream whose TLS certificate is of an unknown CA reached nginx")
        #expect(ranRefused.status == 74, "relay without the CA exited \(ranRefused.status): \(ranRefused.errText.suffix(1500))")
        // Each try fails in the handshake; the few audio frames handed to a try's graph before
        // it failed are lost with it (no keyframe ever is), the rest counted as not sent.
        let c = RelayCase.counters(ranRefused.outText)
        let unsent = ranRefused.outText.firstMatch(of: /not sent while the destination was down: (\d+)/).flatMap { Int($0.1) } ?? 0
        #expect(c.failures >= 2 && c.outputs == c.failures && c.relayedVideo == 0 && unsent > 500, "\(c), unsent \(unsent): \(ranRefused.outText.suffix(800))")
        #expect(ranRefused.errText.contains("TLS certificate"), "the log names the certificate: \(ranRefused.errText.suffix(1500))")
    }
}

/// `--tls-ca-file` that holds no certificate is a usage error before joining (the built sfubot,
/// no Janus), not a destination refused later.
@Test("relay refuses a --tls-ca-file that is missing or holds no PEM certificate")
func relayRefusesABadTLSCAFile() async throws {
    let dir = try Scene.tempDirectory("relay-tls-ca-file")
    let notPEM = dir.appendingPathComponent("not.pem")
    try Data("not a certificate\n".utf8).write(to: notPEM)
    let base = ["relay", "--no-e2ee", "--room", "1", "--janus", "ws://127.0.0.1:1", "--to", "rtmps://127.0.0.1/live/x", "--tls-ca-file"]
    for (file, why) in [(dir.appendingPathComponent("none.pem").path, "--tls-ca-file"), (notPEM.path, "holds no PEM certificate")] {
        let r = try await SfubotProcess.run(base + [file])
        #expect(r.status == 64 && r.err.contains(why) && r.err.contains(file), "\(file): \(r.status) \(r.err)")
    }
}
