/// Messages captured from Debian 12's Janus 1.1.2 (deploy/janus config) while sfubot and a
/// raw WebSocket client talked to it. SDP bodies are shortened; everything else is verbatim.
enum Captured {
    static let createSuccess = #"{"janus": "success", "transaction": "a2", "data": {"id": 3551456549778141}}"#
    static let noSuchSession = #"{"janus": "error", "session_id": 123, "transaction": "a1", "error": {"code": 458, "reason": "No such session 123"}}"#
    static let unknownRequest = #"{"janus": "error", "session_id": 3551456549778141, "transaction": "a6", "error": {"code": 453, "reason": "Unknown request 'bogus'"}}"#
    static let noSuchRoom = #"{"janus": "event", "session_id": 3551456549778141, "transaction": "a4", "sender": 4721328218401715, "plugindata": {"plugin": "janus.plugin.videoroom", "data": {"videoroom": "event", "error_code": 426, "error": "No such room (4244)"}}}"#
    static let ackAfterEvent = #"{"janus": "ack", "session_id": 3551456549778141, "transaction": "a4"}"#
    static let roomCreated = #"{"janus": "success", "session_id": 3551456549778141, "transaction": "a5", "sender": 4721328218401715, "plugindata": {"plugin": "janus.plugin.videoroom", "data": {"videoroom": "created", "room": 4250, "permanent": false}}}"#
    static let joined = #"{"janus": "event", "session_id": 8872963342818270, "transaction": "t4", "sender": 411955367889168, "plugindata": {"plugin": "janus.plugin.videoroom", "data": {"videoroom": "joined", "room": 4243, "description": "Room 4243", "id": 6957124351182499, "private_id": 2806420216, "publishers": []}}}"#
    static let publisherAppeared = #"{"janus": "event", "session_id": 8872963342818270, "sender": 411955367889168, "plugindata": {"plugin": "janus.plugin.videoroom", "data": {"videoroom": "event", "room": 4243, "publishers": [{"id": 7027339154702459, "display": "42:Alice", "audio_codec": "opus", "streams": [{"type": "audio", "mindex": 0, "mid": "audio0", "codec": "opus", "stereo": true}]}]}}}"#
    static let attached = #"{"janus": "event", "session_id": 8872963342818270, "transaction": "t6", "sender": 4697443533694880, "plugindata": {"plugin": "janus.plugin.videoroom", "data": {"videoroom": "attached", "room": 4243, "streams": [{"type": "audio", "active": true, "mindex": 0, "mid": "0", "ready": false, "send": true, "feed_id": 7027339154702459, "feed_display": "42:Alice", "feed_mid": "audio0", "codec": "opus"}]}}, "jsep": {"type": "offer", "sdp": "v=0\r\no=- 1795255086599532 1 IN IP4 127.0.0.1\r\ns=VideoRoom 4243\r\n"}}"#
    static let trickle = #"{"janus": "trickle", "session_id": 8872963342818270, "sender": 4697443533694880, "candidate": {"sdpMid": "0", "sdpMLineIndex": 0, "candidate": "candidate:1 1 udp 2015363327 127.0.0.1 22489 typ host"}}"#
    static let trickleCompleted = #"{"janus": "trickle", "session_id": 8872963342818270, "sender": 4697443533694880, "candidate": {"completed": true}}"#
    static let webrtcUp = #"{"janus": "webrtcup", "session_id": 8872963342818270, "sender": 4697443533694880}"#
    static let leavingOK = #"{"janus": "event", "session_id": 8872963342818270, "transaction": "t11", "sender": 411955367889168, "plugindata": {"plugin": "janus.plugin.videoroom", "data": {"videoroom": "event", "room": 4243, "leaving": "ok"}}}"#
    static let unpublished = #"{"janus": "event", "session_id": 8872963342818270, "sender": 411955367889168, "plugindata": {"plugin": "janus.plugin.videoroom", "data": {"videoroom": "event", "room": 4243, "unpublished": 7027339154702459}}}"#
}
