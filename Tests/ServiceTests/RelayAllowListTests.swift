@testable import Service
import Testing

/// `--relay-allow`: the only way a call's decrypted media may leave the machine from serve.
@Suite struct RelayAllowListTests {
    @Test("scheme, host, port and path prefix must all match; a default port is written out; nothing is allowed without an entry")
    func matching() throws {
        let list = try RelayAllowList(["rtmp://live.example/app", "srt://10.0.0.5:9000", "rtp://[::1]:5004"])
        #expect(list.allows("rtmp://live.example:1935/app/stream-key"))
        #expect(list.allows("rtmp://LIVE.example/app/x"), "host names compare lowercased")
        #expect(!list.allows("rtmp://live.example/apple/x"), "a path prefix ends at a /")
        #expect(!list.allows("rtmp://live.example:1936/app/x"))
        #expect(!list.allows("rtmps://live.example/app/x"), "another scheme")
        #expect(!list.allows("rtmp://user:pw@live.example/app/x"), "no userinfo")
        #expect(list.allows("srt://10.0.0.5:9000?passphrase=abc"))
        #expect(!list.allows("srt://10.0.0.6:9000"))
        #expect(list.allows("rtp://[::1]:5004"))
        #expect(!RelayAllowList().allows("rtp://127.0.0.1:5004"))
    }

    @Test("speaker streams: ws:// and wss:// entries, a default port written out, {participant} a path segment like any other")
    func speakerStreams() throws {
        let list = try RelayAllowList(["wss://asr.example/speakers", "ws://127.0.0.1:8765"])
        #expect(list.allows("wss://asr.example:443/speakers/{participant}?token=t"))
        #expect(list.allows("ws://127.0.0.1:8765/any/{participant}"))
        #expect(!list.allows("wss://asr.example/other/{participant}"), "another path")
        #expect(!list.allows("ws://asr.example/speakers/{participant}"), "ws:// is not wss://")
        #expect(!list.allows("wss://asr.example.evil/speakers/{participant}"))
    }

    @Test("an entry that is not a destination is refused at start, naming the form")
    func badEntries() {
        for entry in ["http://example", "rtmp://", "srt://host", "rtp://h:70000", "srt://h:1?latency=1"] {
            #expect(throws: ServeError.self, "\(entry)") { try RelayAllowList([entry]) }
        }
    }
}
