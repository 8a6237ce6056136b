/// What went wrong talking to the ECall backend, in words that say what to do.
public enum ECallError: Error, Equatable, CustomStringConvertible {
    /// The backend could not be reached.
    case unreachable(String)
    /// The backend answered with an error (`{"error":{code,status,title,detail}}`).
    case rejected(status: Int, code: String, detail: String)
    /// A call that needs a login was made before one.
    case notLoggedIn
    /// The answer was not what ECall sends.
    case badResponse(String)
    case sessionFile(String)

    public var description: String {
        switch self {
        case .unreachable(let why): "the ECall backend is unreachable: \(why)"
        case .rejected(let status, let code, let detail): "the ECall backend refused (\(status) \(code)): \(detail)"
        case .notLoggedIn: "not logged in to ECall: run the login first (it keeps its session file)"
        case .badResponse(let why): "unexpected answer from the ECall backend: \(why)"
        case .sessionFile(let why): "session file: \(why)"
        }
    }
}
