public import Janus
public import GStreamerKit

/// What stopped a bot, in one line that says what to do.
public enum BotError: Error, CustomStringConvertible, Sendable {
    case janus(JanusError)
    case media(GStreamerError)
    case pipelinesNotFound(String)
    case inputNotFound(String)
    case roomNotFound(Int64)
    case negotiation(String)
    case pipelineFailed(String)
    case output(String)

    public var description: String {
        switch self {
        case .janus(let e): e.description
        case .media(let e): e.description
        case .pipelinesNotFound(let p): "pipeline descriptions not found (looked in \(p)); pass --pipelines DIR or set SFUBOT_PIPELINES"
        case .inputNotFound(let p): "cannot read \(p): check the path"
        case .roomNotFound(let r): "room \(r) does not exist on this Janus: create it first (or check --room)"
        case .negotiation(let m): "WebRTC negotiation with Janus failed: \(m)"
        case .pipelineFailed(let m): "media pipeline failed: \(m)"
        case .output(let m): "cannot write the recording: \(m)"
        }
    }
}
