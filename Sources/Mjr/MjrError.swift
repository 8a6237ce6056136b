/// Why a `.mjr` file could not be read at all (a damaged tail is not an error: the packets
/// before it are kept and `MjrFile.truncated` says so).
public struct MjrError: Error, CustomStringConvertible, Sendable, Equatable {
    private enum Kind: Sendable, Equatable {
        case unreadable(String, String)
        case folder(String)
        case notRegular(String, String)
        case empty(String)
        case notMjr(String)
        case oldFormat(String)
        case badInfo(String, String)
        case unsupported(String, String)
        case dataChannel(String)
    }
    private let kind: Kind

    static func unreadable(_ path: String, _ why: String) -> Self { .init(kind: .unreadable(path, why)) }
    static func folder(_ path: String) -> Self { .init(kind: .folder(path)) }
    static func notRegular(_ path: String, _ what: String) -> Self { .init(kind: .notRegular(path, what)) }
    static func empty(_ path: String) -> Self { .init(kind: .empty(path)) }
    static func notMjr(_ path: String) -> Self { .init(kind: .notMjr(path)) }
    static func oldFormat(_ path: String) -> Self { .init(kind: .oldFormat(path)) }
    static func badInfo(_ path: String, _ why: String) -> Self { .init(kind: .badInfo(path, why)) }
    static func unsupported(_ path: String, _ what: String) -> Self { .init(kind: .unsupported(path, what)) }
    static func dataChannel(_ path: String) -> Self { .init(kind: .dataChannel(path)) }

    /// A recording of a data channel (Janus records those too, `-data-N.mjr`): no media to
    /// decrypt, so `MjrDecrypt` skips it instead of failing.
    public var isDataChannel: Bool { if case .dataChannel = kind { true } else { false } }

    public var description: String {
        switch kind {
        case .unreadable(let p, let why): "cannot read \(p) (\(why)): check the path"
        case .folder(let p): "\(p) is a folder, not a .mjr file: pass the .mjr files in it"
        case .notRegular(let p, let what): "\(p) is not a regular file (\(what)): pass a .mjr file Janus wrote"
        case .empty(let p): "\(p) is empty: Janus had not written its header yet"
        case .notMjr(let p): "\(p) is not a Janus recording (.mjr files start with MJR00002)"
        case .oldFormat(let p): "\(p) is an MJR00001 recording (Janus before 0.10): not supported"
        case .badInfo(let p, let why): "\(p) has a broken info header (\(why))"
        case .unsupported(let p, let what): "\(p) holds \(what): only Opus audio and H.264 video are supported"
        case .dataChannel(let p): "\(p) is a data channel recording: no media in it"
        }
    }
}
