/// What went wrong talking to the ECall backend, in words that say what to do. A struct with a
/// private kind so cases can be added; callers classify it with `status`, `code` and the `is…`
/// properties instead of matching cases.
public struct ECallError: Error, Equatable, CustomStringConvertible, Sendable {
    private enum Kind: Equatable, Sendable {
        case unreachable(String)
        case rejected(status: Int, code: String, detail: String)
        case notLoggedIn
        case badResponse(String)
        case sessionFile(String)
    }
    private let kind: Kind

    /// The backend could not be reached.
    public static func unreachable(_ why: String) -> Self { .init(kind: .unreachable(why)) }
    /// The backend answered with an error (`{"error":{code,status,title,detail}}`).
    public static func rejected(status: Int, code: String, detail: String) -> Self {
        .init(kind: .rejected(status: status, code: code, detail: detail))
    }
    /// A call that needs a login was made before one.
    public static let notLoggedIn = Self(kind: .notLoggedIn)
    /// The answer was not what ECall sends.
    public static func badResponse(_ why: String) -> Self { .init(kind: .badResponse(why)) }
    /// The session file could not be read or written.
    public static func sessionFile(_ why: String) -> Self { .init(kind: .sessionFile(why)) }

    /// The HTTP status of a refusal (`rejected`), else nil.
    public var status: Int? {
        if case .rejected(let status, _, _) = kind { status } else { nil }
    }

    /// ECall's error code of a refusal (`ErrAccessTokenExpired`, `ErrInvalidOTP`, ...; `HTTP<status>`
    /// when the answer had none), else nil.
    public var code: String? {
        if case .rejected(_, let code, _) = kind { code } else { nil }
    }

    /// The backend could not be reached (nothing was answered): worth retrying later.
    public var isUnreachable: Bool {
        if case .unreachable = kind { true } else { false }
    }

    /// A 401 `ErrAccessTokenExpired`: refresh the access token and try again.
    public var isAccessTokenExpired: Bool { status == 401 && code == "ErrAccessTokenExpired" }

    public var description: String {
        switch kind {
        case .unreachable(let why):
            "the ECall backend is unreachable: \(why) (check the api URL and that the backend is up)"
        case .rejected(let status, let code, let detail):
            "the ECall backend refused (\(status) \(code)): \(detail)\(Self.advice(status: status, code: code))"
        case .notLoggedIn:
            "not logged in to ECall: run the login first (it keeps its session file)"
        case .badResponse(let why):
            "unexpected answer from the ECall backend: \(why) (is the api URL ECall's `<api>/app/api`?)"
        case .sessionFile(let why):
            "session file: \(why)"
        }
    }

    /// What the user can do about a refusal, where the code says.
    private static func advice(status: Int, code: String) -> String {
        switch code {
        case "ErrInvalidSignature": " (check api_id and api_secret, and that this machine's clock is right)"
        case "ErrInvalidOTP": " (check the one-time code)"
        case "ErrInvalidRefreshToken", "ErrUnauthorized", "ErrAccessTokenExpired":
            " (the session is no longer valid: delete the session file and log in again)"
        default: status >= 500 ? " (a backend failure: try again later)" : ""
        }
    }
}
