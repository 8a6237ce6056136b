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

    static func credentials(_ json: String) throws -> Credentials { try JSONDecoder().decode(Credentials.self, from: Data(json.utf8)) }

    @Test("both /credentials URLs become TURN servers: turn: as it is, turns: only through its TLS bridge, never to libnice in the clear")
    func turnServersFromCredentialsBecomeWebRTCBinURIs() throws {
        func turn(_ json: String, caFile: String? = nil) throws -> ICEServers { Agent.turnServers(try Self.credentials(json), caFile: caFile) }
        let both = try turn(#"{"tlsUrl":"turns:turn.example:5349?transport=tcp","noneTlsUrl":"turn:turn.example:3478","turnUsername":"u@x","turnPassword":"p:w/1","rabbitmqToken":"t"}"#,
                            caFile: "/etc/sfubot/turn-ca.pem")
        #expect(both.servers.map(\.description) == ["turn:turn.example:3478", "turns:turn.example:5349?transport=tcp"])
        #expect(both.caFile == "/etc/sfubot/turn-ca.pem")
        #expect(both.turnURIs(bridged: { $0.scheme == .turns ? 40123 : nil })
                == ["turn://u%40x:p%3Aw%2F1@turn.example:3478", "turn://u%40x:p%3Aw%2F1@127.0.0.1:40123?transport=tcp"])
        #expect(both.turnURIs() == ["turn://u%40x:p%3Aw%2F1@turn.example:3478"], "no bridge, no turns: server")
        #expect(!both.description.contains("p:w/1"), "\(both)")
        // Only a turns: URL (a backend serving TURN over TLS alone).
        #expect(try turn(#"{"tlsUrl":"turns:127.0.0.1:5350?transport=tcp","turnUsername":"u","turnPassword":"p","rabbitmqToken":"t"}"#).servers.map(\.description)
                == ["turns:127.0.0.1:5350?transport=tcp"])
        // The stand-in's ws: URLs are no TURN servers; without credentials there is none.
        #expect(try turn(#"{"tlsUrl":"ws://127.0.0.1:15674/ws","turnUsername":"u","turnPassword":"p","rabbitmqToken":"t"}"#).servers.isEmpty)
        #expect(try turn(#"{"tlsUrl":"turn:h:1","turnUsername":"","turnPassword":"","rabbitmqToken":"t"}"#).servers.isEmpty)
    }

    @Test("the Web-STOMP URL is the config's stomp; else a ws(s): URL of /credentials (the stand-in's), never a TURN URL")
    func stompURLChoice() throws {
        let turnOnly = try Self.credentials(#"{"tlsUrl":"turns:t:5349?transport=tcp","noneTlsUrl":"turn:t:3478","rabbitmqToken":"t"}"#)
        let standIn = try Self.credentials(#"{"tlsUrl":"ws://127.0.0.1:15674/ws/","noneTlsUrl":"turn:t:3478","rabbitmqToken":"t"}"#)
        let secure = try Self.credentials(#"{"noneTlsUrl":"wss://mq.example/ws","rabbitmqToken":"t"}"#)
        #expect(Agent.stompURL(config: "wss://ecall.example/ws", turnOnly) == "wss://ecall.example/ws")
        #expect(Agent.stompURL(config: "wss://ecall.example/ws", standIn) == "wss://ecall.example/ws", "the config wins")
        #expect(Agent.stompURL(config: nil, standIn) == "ws://127.0.0.1:15674/ws/")
        #expect(Agent.stompURL(config: "", secure) == "wss://mq.example/ws")
        #expect(Agent.stompURL(config: nil, turnOnly) == nil, "a TURN URL is never taken for STOMP")
    }

    @Test("turn_ca_file is relative to the config; a missing one is a config error naming it")
    func turnCAFileOption() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("agent-ca-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("agent.json")
        try Data(#"{"api":"http://127.0.0.1:1/app/api","api_id":"a","api_secret":"s","identity":"k","session":"s","email":"a@b","display_name":"A","janus":"ws://127.0.0.1:1","turn_ca_file":"ca.pem"}"#.utf8).write(to: file)
        #expect(throws: AgentError.self) { try AgentConfig.load(file.path) }
        do { _ = try AgentConfig.load(file.path) } catch {
            #expect(error.description.contains("turn_ca_file \(dir.path)/ca.pem: no such file"), "\(error)")
        }
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
