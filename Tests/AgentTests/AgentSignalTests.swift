@testable import ECallAgent
import ECall
import Bot
import Foundation
import GStreamerKit
import Logging
import Testing
import TestSupport

/// What the agent does with bad signal messages: counts them, logs a line, acts on none.
struct AgentSignalTests {
    @Test func malformedUnknownAndForeignMessagesAreCountedAndIgnored() async throws {
        let config = try JSONDecoder().decode(AgentConfig.self, from: Data("""
            {"api":"http://127.0.0.1:1/app/api","api_id":"a","api_secret":"s","identity":"k","session":"s",
             "email":"a@b","display_name":"A","janus":"ws://127.0.0.1:1"}
            """.utf8))
        let log = CapturedLog()
        let agent = Agent(config: config, pipelines: try PipelineLibrary(), logger: log.logger("agent"))
        for body in ["", "not json", #"{"type":"#, "[1,2]", #"{"callId":5}"#, String(repeating: "{", count: 10_000)] {
            await agent.received(Data(body.utf8))
        }
        await agent.received(Data(#"{"type":"future_feature","callId":5}"#.utf8))
        await agent.received(Data(#"{"type":"key_rotation","callId":77,"encryptedAESKey":"x"}"#.utf8))
        await agent.received(Data(#"{"type":"call_ended","callId":"not a number"}"#.utf8))
        let c = await agent.counters
        #expect(c.signals == 9 && c.malformedSignals == 7 && c.unknownSignals == 1 && c.otherCalls == 1, "\(c)")
        #expect(c.rotationsApplied == 0 && c.rotationsRefused == 0 && c.callsEnded == 0)
        #expect(log.text.contains("unknown signal type 'future_feature'") && log.text.contains("not a JSON signal message"))
    }

    @Test func turnServersFromCredentialsBecomeWebRTCBinURIs() throws {
        func turn(_ json: String) throws -> [String] { Agent.turnServers(try JSONDecoder().decode(Credentials.self, from: Data(json.utf8))) }
        #expect(try turn(#"{"tlsUrl":"turns:turn.example:5349?transport=tcp","noneTlsUrl":"turn:turn.example:3478","turnUsername":"u@x","turnPassword":"p:w/1","rabbitmqToken":"t"}"#)
                == ["turn://u%40x:p%3Aw%2F1@turn.example:3478"])  // turns: is left out: libnice does no TLS to TURN
        // The stand-in's ws: URLs are no TURN servers; without credentials there is none.
        #expect(try turn(#"{"tlsUrl":"ws://127.0.0.1:15674/ws","turnUsername":"u","turnPassword":"p","rabbitmqToken":"t"}"#).isEmpty)
        #expect(try turn(#"{"tlsUrl":"turn:h:1","turnUsername":"","turnPassword":"","rabbitmqToken":"t"}"#).isEmpty)
    }

    @Test func webrtcbinTakesThoseURIsAndRefusesBrokenOnes() throws {
        let pipeline = try Pipeline(description: "webrtcbin name=w")
        let webrtc = try WebRTCBin(pipeline.element(named: "w"))
        try webrtc.addTurnServer("turn://u%40x:p%3Aw%2F1@127.0.0.1:3478")
        try webrtc.addTurnServer("turns://u:p@127.0.0.1:5349")
        #expect(throws: GStreamerError.self) { try webrtc.addTurnServer("turn://127.0.0.1:3478") }
    }
}

/// TURN credentials from ECall's `/credentials`: what the stand-in serves is what coturn's
/// `use-auth-secret` accepts, and the agent fetches them again halfway to their expiry.
@Suite struct AgentTURNCredentialTests {
    @Test("a coturn REST username is renewed halfway to its expiry, at least a minute on; static ones hourly")
    func refreshDelay() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(Agent.turnRefreshDelay(username: "1700086400:42", now: now) == .seconds(43_200))
        #expect(Agent.turnRefreshDelay(username: "1700000010:42", now: now) == .seconds(60))
        #expect(Agent.turnRefreshDelay(username: "recorder", now: now) == .seconds(3600))
        #expect(Agent.turnRefreshDelay(username: nil, now: now) == .seconds(3600))
    }
}
