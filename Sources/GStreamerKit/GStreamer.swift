internal import CGStreamer

/// Process-wide GStreamer setup.
public enum GStreamer {
    private static let initialized: Bool = {
        gst_init(nil, nil)
        return true
    }()

    /// Calls `gst_init` once per process; every GStreamerKit entry point calls it first.
    public static func initialize() { _ = initialized }

    /// The runtime's version, e.g. "GStreamer 1.22.0".
    public static var version: String {
        initialize()
        guard let v = gst_version_string() else { return "GStreamer (unknown)" }
        defer { g_free(v) }
        return String(cString: v)
    }

    /// Whether an element factory is installed (e.g. "opusenc" needs gstreamer1.0-plugins-base).
    public static func hasElement(_ factory: String) -> Bool {
        initialize()
        guard let f = gst_element_factory_find(factory) else { return false }
        gst_object_unref(UnsafeMutableRawPointer(f))
        return true
    }
}

/// What went wrong in GStreamer, said so a user can act on it.
public struct GStreamerError: Error, CustomStringConvertible, Sendable {
    private enum Kind: Sendable {
        case parse(String)
        case missingElement(String)
        case missingProperty(element: String, property: String)
        case badPropertyValue(element: String, property: String, value: String)
        case missingPad(element: String, pad: String)
        case linkFailed(String)
        case stateChange(String)
        case stateChangeFailed(pipeline: String, state: String, element: String?, message: String?, debug: String?)
        case promise(String)
        case sdp(String)
        case webrtc(String)
        case interrupted(String)
    }
    private let kind: Kind

    public static func parse(_ m: String) -> Self { .init(kind: .parse(m)) }
    public static func missingElement(_ n: String) -> Self { .init(kind: .missingElement(n)) }
    public static func missingProperty(element: String, property: String) -> Self {
        .init(kind: .missingProperty(element: element, property: property))
    }
    public static func badPropertyValue(element: String, property: String, value: String) -> Self {
        .init(kind: .badPropertyValue(element: element, property: property, value: value))
    }
    public static func missingPad(element: String, pad: String) -> Self { .init(kind: .missingPad(element: element, pad: pad)) }
    public static func linkFailed(_ m: String) -> Self { .init(kind: .linkFailed(m)) }
    public static func stateChange(_ m: String) -> Self { .init(kind: .stateChange(m)) }
    /// A refused state change, with the error the failing element posted (if it did).
    static func stateChangeFailed(pipeline: String, state: String, element: String?, message: String?, debug: String?) -> Self {
        .init(kind: .stateChangeFailed(pipeline: pipeline, state: state, element: element, message: message, debug: debug))
    }
    public static func promise(_ m: String) -> Self { .init(kind: .promise(m)) }
    public static func sdp(_ m: String) -> Self { .init(kind: .sdp(m)) }
    public static func webrtc(_ m: String) -> Self { .init(kind: .webrtc(m)) }
    /// A finite pipeline that did not reach its end (its task was cancelled).
    public static func interrupted(_ m: String) -> Self { .init(kind: .interrupted(m)) }

    /// The useful end of GStreamer's debug text (its first line is a source location),
    /// e.g. " (system error: No such file or directory)".
    private static func detail(_ debug: String?) -> String {
        guard let debug, let last = debug.split(whereSeparator: \.isNewline).last, debug.contains(where: \.isNewline) else { return "" }
        return " (\(last))"
    }

    public var description: String {
        switch kind {
        case .parse(let m): "pipeline description does not parse: \(m) (is the plugin installed? see README)"
        case .missingElement(let n): "pipeline has no element named '\(n)': the pipelines/ file must name it"
        case .missingProperty(let e, let p): "element '\(e)' has no property '\(p)'"
        case .badPropertyValue(let e, let p, let v): "'\(v)' is not a valid value for \(e).\(p)"
        case .missingPad(let e, let p): "element '\(e)' has no pad '\(p)'"
        case .linkFailed(let m): "cannot link: \(m)"
        case .stateChange(let m): "pipeline did not start: \(m)"
        case .stateChangeFailed(let p, let s, let e?, let m, let d):
            "pipeline '\(p)' cannot go to \(s): element '\(e)' failed: \(m ?? "no reason given")" + Self.detail(d)
        case .stateChangeFailed(let p, let s, nil, _, _):
            "pipeline '\(p)' cannot go to \(s): an element refused without posting an error (GST_DEBUG=3 shows which)"
        case .promise(let m): "webrtcbin request failed: \(m)"
        case .sdp(let m): "bad SDP: \(m)"
        case .webrtc(let m): "webrtcbin: \(m)"
        case .interrupted(let m): "pipeline interrupted: \(m)"
        }
    }
}
