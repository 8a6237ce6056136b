import Bot
import Foundation
import Testing
import TestSupport

/// `--from` read once, without I/O: the schemes taken, what is refused, and that a source is
/// never shown with its stream name or query (often the stream's key).
@Suite struct LiveSourceAddressTests {
    @Test func schemes() throws {
        #expect(try LiveSourceAddress("rtmp://127.0.0.1/live/secret-key").kind == .rtmp)
        #expect(try LiveSourceAddress("rtmps://example.org:443/app/k").kind == .rtmp)
        #expect(try LiveSourceAddress("srt://127.0.0.1:9000?mode=listener").kind == .srt)
        #expect(try LiveSourceAddress("rtp://127.0.0.1:5004").kind == .rtp)
    }

    @Test(arguments: [("ftp://h/x", "not a live source"), ("rtmp://h/live", "names no application and stream"),
                      ("srt://h", "has no port"), ("rtp://h", "has no port"), ("nothing", "not a URL")])
    func refused(_ text: String, _ why: String) {
        do {
            _ = try LiveSourceAddress(text)
            Issue.record("\(text) was taken")
        } catch { #expect("\(error)".contains(why), "\(error)") }
    }

    @Test func secretsAreNeverShown() throws {
        #expect(try LiveSourceAddress("rtmp://u:pw@127.0.0.1:1936/live/secret-key").description == "rtmp://127.0.0.1:1936/live/***")
        #expect(try LiveSourceAddress("srt://127.0.0.1:9000?passphrase=hunter2hunter2").description == "srt://127.0.0.1:9000")
        do { _ = try LiveSourceAddress("gopher://h/live/secret-key") } catch { #expect(!"\(error)".contains("secret-key"), "\(error)") }
    }

    @Test("relay takes exactly one of --to and --from; --from has no --participant; a bad source is refused before joining")
    func cliRefuses() async throws {
        let base = ["relay", "--no-e2ee", "--room", "1", "--janus", "ws://127.0.0.1:1"]
        for (args, why) in [(["--from", "http://127.0.0.1/live/k"], "not a live source"),
                            (["--from", "rtmp://127.0.0.1/live/k", "--to", "rtmp://127.0.0.1/live/o"], "exactly one of"),
                            ([String](), "exactly one of"),
                            (["--from", "rtmp://127.0.0.1/live/k", "--participant", "7"], "--participant goes with --to")] {
            let r = try await SfubotProcess.run(base + args)
            #expect(r.status == 64 && r.err.contains(why), "\(args): \(r.status) \(r.err)")
        }
    }
}
