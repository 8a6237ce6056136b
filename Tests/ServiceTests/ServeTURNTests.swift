import Foundation
import Testing
import TestSupport

extension MediaScene {
    /// `sfubot serve --ice-server … --ice-transport-policy relay`: every job goes through
    /// coturn (a firewall drops UDP to Janus's RTP ports from anything but coturn's relay
    /// ports); the job status names the relay pair and never a credential.
    @Suite struct ServeTURNTests {
        @Test("a recording and a playback through coturn: the status says relay, the tone is recorded, no password anywhere")
        func jobsThroughTheRelay() async throws {
            let dir = try Scene.tempDirectory("serve-turn")
            let password = "serve-turn-secret-pw"
            let credentials = dir.appendingPathComponent("turn.cred").path
            _ = FileManager.default.createFile(atPath: credentials, contents: Data("sfubot-serve\n\(password)\n".utf8), attributes: [.posixPermissions: 0o600])
            let janusRTP = 13200...13299, relay = 14200...14299
            try await OwnJanus.with(port: 8222, in: dir, rtpPorts: janusRTP) { janus in
                try await OwnCoturn.with(port: 3480, relayPorts: relay, auth: .user("sfubot-serve", password: password), in: dir) { coturn in
                    let room = try await Scene.createPermanentRoom(janus.url)
                    let tone = try await Audio.tone(440, seconds: 3, in: dir)
                    let firewall = try await RelayOnlyFirewall(janusRTP: janusRTP, relayPorts: relay, turnPort: coturn.port)
                    let serve = try await ServeProcess.start(port: 18491, in: dir, janus: janus.url, extra: [
                        "--ice-server", coturn.url(), "--turn-credentials-file", credentials, "--ice-transport-policy", "relay",
                    ])
                    do {
                        let key = String(repeating: "5b", count: 32), out = dir.appendingPathComponent("rec")
                        let rec = try await serve.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": out.path])
                        #expect(rec.status == 201, "\(rec.text)")
                        let recID = try #require(try rec.json()["id"] as? String)
                        let play = try await serve.request("POST", "/v1/playbacks", json: [
                            "room": room, "key": ["hex": key], "file": tone.path, "loop": true, "display": "7:Tone",
                        ])
                        #expect(play.status == 201, "\(play.text)")
                        let playID = try #require(try play.json()["id"] as? String)
                        let running = try await serve.waitFor("/v1/recordings/\(recID)", within: .seconds(60)) { s in
                            ((s["feeds"] as? [[String: Any]]) ?? []).contains { ($0["framesOpened"] as? Int ?? 0) > 100 } && s["candidatePair"] != nil
                        }
                        let status = try await serve.request("GET", "/v1/recordings/\(recID)")
                        print("serve through coturn: candidatePair \(running["candidatePair"] ?? "none"); \(try await firewall.counts())")
                        #expect(running["candidatePair"] as? String == "relay→host", "\(running)")
                        #expect(!status.text.contains(password) && !status.text.contains("sfubot-serve"), "no TURN credential in the status")
                        _ = try await serve.request("DELETE", "/v1/playbacks/\(playID)")
                        let final = try await serve.request("DELETE", "/v1/recordings/\(recID)").json()
                        let files = try #require(final["files"] as? [String])
                        let opus = try #require(files.first { $0.hasSuffix(".opus") })
                        let samples = try await Audio.decode(URL(fileURLWithPath: opus))
                        #expect(Audio.dominantFrequency(samples).map { abs($0 - 440) < 10 } == true, "the recording decodes to the tone")
                        let counts = try await firewall.counts()
                        #expect(counts.directIn == 0 && counts.directOut == 0 && counts.relayed > 100, "\(counts)")
                        serve.process.signal(SIGTERM)
                        let ended = await serve.process.finished()
                        #expect(!ended.errText.contains(password) && !ended.outText.contains(password), "no TURN password in serve's output")
                    } catch {
                        serve.process.signal(SIGKILL)
                        await firewall.remove()
                        throw error
                    }
                    await firewall.remove()
                }
            }
        }

        @Test("jobs through turns: with --turn-ca-file: relayed over coturn's TLS port only; with another CA file a job's lastError names the certificate")
        func jobsThroughTLS() async throws {
            let dir = try Scene.tempDirectory("serve-turns")
            let password = "serve-turns-secret-pw"
            let credentials = dir.appendingPathComponent("turn.cred").path
            _ = FileManager.default.createFile(atPath: credentials, contents: Data("sfubot-serve\n\(password)\n".utf8), attributes: [.posixPermissions: 0o600])
            let (cert, key) = try await OwnCoturn.selfSigned("coturn", for: ["localhost"], in: dir)
            let other = try await OwnCoturn.selfSigned("other", for: ["localhost"], in: dir).cert
            let janusRTP = 13200...13299, relay = 14200...14299
            try await OwnJanus.with(port: 8222, in: dir, rtpPorts: janusRTP) { janus in
                try await OwnCoturn.with(port: 3480, relayPorts: relay, auth: .user("sfubot-serve", password: password),
                                         tls: .init(port: 5351, cert: cert, key: key), in: dir) { coturn in
                    let room = try await Scene.createPermanentRoom(janus.url)
                    let tone = try await Audio.tone(440, seconds: 3, in: dir)
                    let firewall = try await RelayOnlyFirewall(janusRTP: janusRTP, relayPorts: relay, turnPort: coturn.port, tlsPort: 5351)
                    func serve(_ port: Int, ca: String) async throws -> ServeProcess {
                        // One token file in dir for both: the same token.
                        try await ServeProcess.start(port: port, in: dir, stateDir: dir.appendingPathComponent("state-\(port)"), token: String(repeating: "ab", count: 32),
                                                     janus: janus.url, extra: [
                            "--ice-server", "turns:localhost:5351", "--turn-credentials-file", credentials, "--turn-ca-file", ca, "--ice-transport-policy", "relay",
                        ])
                    }
                    let key = String(repeating: "5c", count: 32)
                    let good = try await serve(18492, ca: cert)
                    do {
                        let rec = try await good.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": dir.appendingPathComponent("rec").path])
                        let recID = try #require(try rec.json()["id"] as? String, "\(rec.text)")
                        let play = try await good.request("POST", "/v1/playbacks", json: ["room": room, "key": ["hex": key], "file": tone.path, "loop": true, "display": "7:Tone"])
                        #expect(play.status == 201, "\(play.text)")
                        let running = try await good.waitFor("/v1/recordings/\(recID)", within: .seconds(60)) { s in
                            ((s["feeds"] as? [[String: Any]]) ?? []).contains { ($0["framesOpened"] as? Int ?? 0) > 100 } && s["candidatePair"] != nil
                        }
                        let counts = try await firewall.counts()
                        print("serve through turns: candidatePair \(running["candidatePair"] ?? "none"); \(counts)")
                        #expect(running["candidatePair"] as? String == "relay→host", "\(running)")
                        #expect(counts.turnTLS > 100 && counts.turnTCP == 0 && counts.turnUDP == 0 && counts.directIn == 0, "TLS to coturn only: \(counts)")
                    } catch {
                        good.process.signal(SIGKILL)
                        await firewall.remove()
                        throw error
                    }
                    // The first service's playback stays in the room: the second's recorder has a feed to subscribe to.
                    let wrong = try await serve(18493, ca: other)
                    do {
                        let rec = try await wrong.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": dir.appendingPathComponent("rec-wrong").path])
                        let recID = try #require(try rec.json()["id"] as? String, "\(rec.text)")
                        let status = try await wrong.waitFor("/v1/recordings/\(recID)", within: .seconds(20)) { s in
                            (s["lastError"] as? String)?.contains("certificate") == true
                        }
                        let lastError = status["lastError"] as? String ?? ""
                        print("serve through turns, another CA: \(status["state"] ?? "?"): \(lastError)")
                        #expect(lastError.contains("the TURN server's certificate for localhost did not verify against \(other)"), "\(lastError)")
                    } catch {
                        wrong.process.signal(SIGKILL)
                        good.process.signal(SIGKILL)
                        await firewall.remove()
                        throw error
                    }
                    wrong.process.signal(SIGTERM)
                    good.process.signal(SIGTERM)
                    _ = await wrong.process.finished()
                    let goodEnded = await good.process.finished()
                    #expect(!goodEnded.errText.contains(password) && !goodEnded.outText.contains(password), "no TURN password in serve's output")
                    await firewall.remove()
                }
            }
        }
    }
}
