import Bot
import Foundation
import Testing
import TestSupport

/// `--to` read once, without I/O: what each scheme sends where, what is refused, and that a
/// destination is never shown with its stream name or query (often the stream's secret).
@Suite struct RelayDestinationTests {
    @Test func schemes() throws {
        let rtmp = try RelayDestination("rtmp://127.0.0.1/live/secret-key")
        #expect(rtmp.kind == .rtmp && rtmp.port == 1935 && rtmp.host == "127.0.0.1")
        #expect(try RelayDestination("rtmps://example.org/app/k").port == 443)
        let srt = try RelayDestination("srt://127.0.0.1:9000?passphrase=hunter2hunter2")
        #expect(srt.kind == .srt && srt.port == 9000)
        let rtp = try RelayDestination("rtp://[::1]:5004")
        #expect(rtp.kind == .rtp && rtp.host == "::1" && rtp.port == 5004 && rtp.videoPort == 5006)
    }

    @Test(arguments: [("ftp://h/x", "not a relay destination"), ("rtmp://h/live", "application and the stream"),
                      ("srt://h", "needs a port"), ("rtp://h:65534", "below 65534"), ("nothing", "not a URL")])
    func refused(_ text: String, _ why: String) {
        #expect(throws: BotError.self) { try RelayDestination(text) }
        do { _ = try RelayDestination(text) } catch { #expect("\(error)".contains(why), "\(error)") }
    }

    @Test func secretsAreNeverShown() throws {
        #expect(try RelayDestination("rtmp://u:pw@127.0.0.1:1936/live/secret-key").description == "rtmp://127.0.0.1:1936/live/***")
        #expect(try RelayDestination("srt://127.0.0.1:9000?passphrase=hunter2hunter2").description == "srt://127.0.0.1:9000")
        do { _ = try RelayDestination("gopher://h/live/secret-key") } catch { #expect(!"\(error)".contains("secret-key"), "\(error)") }
    }

    @Test("srtp://: a 30-byte base64 key in the query, never shown; no key, a short one or not base64 refused")
    func srtp() throws {
        let key = Data((0..<30).map { UInt8($0) }).base64EncodedString()
        let d = try RelayDestination("srtp://127.0.0.1:5004?key=\(key.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")
        #expect(d.kind == .srtp && d.port == 5004 && d.videoPort == 5006)
        #expect(d.description == "srtp://127.0.0.1:5004" && !d.description.contains(key))
        let short = Data(count: 16).base64EncodedString()
        for bad in ["srtp://127.0.0.1:5004", "srtp://127.0.0.1:5004?key=\(short)", "srtp://127.0.0.1:5004?key=%%%", "srtp://127.0.0.1?key=\(key)"] {
            #expect(throws: BotError.self, "\(bad)") { try RelayDestination(bad) }
        }
    }

    @Test func cliRefusesABadDestinationBeforeJoining() async throws {
        let r = try await SfubotProcess.run(["relay", "--no-e2ee", "--room", "1", "--janus", "ws://127.0.0.1:1", "--participant", "7",
                                             "--to", "http://127.0.0.1/live/k"])
        #expect(r.status == 64 && r.err.contains("not a relay destination"), "\(r.status): \(r.err)")
    }
}
