import Foundation
import HTTPTypes
import Hummingbird
import Janus
import Logging
import NIOCore
import NIOFoundationCompat

/// The HTTP API: `/healthz`, `/readyz`, `/metrics` and `/openapi.json` open; every `/v1` route
/// behind the bearer token. Every answer is JSON (`{"error": "…"}` for a refusal) except the
/// metrics' Prometheus text.
struct ServiceRoutes: Sendable {
    let config: ServeConfiguration
    let jobs: JobManager
    let readiness: Readiness

    func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get("healthz") { _, _ in Self.json(["status": "ok"]) }
        router.get("readyz") { _, _ in
            let free = await jobs.freeCapacity
            guard free > 0 else {
                return Self.json(["status": "full", "janus": config.janus, "error": "running \(config.maxJobs) jobs (--max-jobs): no room for another"],
                                 status: .serviceUnavailable)
            }
            switch await readiness.check() {
            case nil: return Self.json(["status": "ready", "janus": config.janus])
            case let problem?: return Self.json(["status": "not ready", "janus": config.janus, "error": problem], status: .serviceUnavailable)
            }
        }
        router.get("metrics") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                     body: .init(byteBuffer: ByteBuffer(string: config.metrics?() ?? "")))
        }
        router.get("openapi.json") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: OpenAPIDocument.json)))
        }
        let v1 = router.group("v1").add(middleware: BearerToken(tokens: config.tokens))
        for kind in JobSpec.Kind.allCases {
            let path = RouterPath(stringLiteral: kind.rawValue + "s")
            v1.post(path) { request, _ in
                try await Self.answer(status: .created) { () async throws(RequestProblem) in
                    let body = try await Self.body(of: request, limit: config.maxBodyBytes)
                    return try await jobs.create(body, kind: kind)
                }
            }
            v1.get(path) { request, _ in
                let query = request.uri.queryParameters
                let limit = query["limit"].map { Int($0) } ?? Self.defaultPage
                guard let limit, (1...Self.maxPage).contains(limit) else {
                    return Self.problem(.field("limit", "must be an integer of 1 to \(Self.maxPage)"))
                }
                do throws(RequestProblem) {
                    let page = try await jobs.page(kind, limit: limit, after: query["after"].map(String.init))
                    var response = Self.encoded(page.jobs, status: .ok)
                    if let next = page.next { response.headers[Self.nextAfter] = next }
                    return response
                } catch { return Self.problem(error) }
            }
            v1.get(RouterPath(stringLiteral: kind.rawValue + "s/:id")) { _, context in
                let id = context.parameters.get("id") ?? ""
                return try await Self.answer(status: .ok) { () async throws(RequestProblem) in try await Self.ofKind(kind, jobs.status(id)) }
            }
            for (action, paused) in [("pause", true), ("resume", false)] {
                v1.post(RouterPath(stringLiteral: kind.rawValue + "s/:id/" + action)) { _, context in
                    let id = context.parameters.get("id") ?? ""
                    return try await Self.answer(status: .ok) { () async throws(RequestProblem) in
                        _ = try Self.ofKind(kind, await jobs.status(id))
                        return try await jobs.setPaused(id, paused)
                    }
                }
            }
            // A key for a running job (JobManager+Keys): 204, nothing echoed back.
            v1.post(RouterPath(stringLiteral: kind.rawValue + "s/:id/keys")) { request, context in
                let id = context.parameters.get("id") ?? ""
                do throws(RequestProblem) {
                    try await jobs.handKey(id, kind: kind, try await Self.body(of: request, limit: config.maxBodyBytes))
                    return Response(status: .noContent)
                } catch { return Self.problem(error) }
            }
            if kind == .recording {
                v1.post("recordings/:id/uploads/abandon") { request, context in
                    let id = context.parameters.get("id") ?? ""
                    return try await Self.answer(status: .ok) { () async throws(RequestProblem) in
                        _ = try Self.ofKind(kind, await jobs.status(id))
                        return try await jobs.abandonUploads(id, try await Self.body(of: request, limit: config.maxBodyBytes))
                    }
                }
            }
            v1.delete(RouterPath(stringLiteral: kind.rawValue + "s/:id")) { _, context in
                let id = context.parameters.get("id") ?? ""
                return try await Self.answer(status: .ok) { () async throws(RequestProblem) in
                    _ = try Self.ofKind(kind, await jobs.status(id))
                    return try await jobs.stop(id)
                }
            }
        }
        return router
    }

    /// A list's page: `limit` jobs unless asked, at most `maxPage`; `Next-After` holds the
    /// `after` of the next page when there is one.
    static let defaultPage = 100
    static let maxPage = 1000
    static let nextAfter = HTTPField.Name("Next-After")!

    /// A job of the other kind is not found under this kind's path.
    private static func ofKind(_ kind: JobSpec.Kind, _ status: JobStatus) throws(RequestProblem) -> JobStatus {
        guard status.kind == kind.rawValue else { throw RequestProblem(status: 404, message: "no \(kind.rawValue) \(status.id)") }
        return status
    }

    /// A body takes at most this long to arrive: the idle timeout restarts at every chunk, so
    /// a client sending a byte now and then would otherwise hold its request for days.
    static let bodyTimeout: Duration = .seconds(10)

    private static func body(of request: Request, limit: Int) async throws(RequestProblem) -> Data {
        do {
            return try await withThrowingTaskGroup(of: Data?.self) { group in
                group.addTask { Data(buffer: try await request.body.collect(upTo: limit)) }
                group.addTask {
                    try await Task.sleep(for: bodyTimeout)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let data = first else {
                    throw RequestProblem(status: 408, message: "the body did not arrive within \(bodyTimeout)")
                }
                return data
            }
        } catch let problem as RequestProblem {
            throw problem
        } catch is NIOTooManyBytesError {
            throw RequestProblem(status: 413, message: "the body is larger than \(limit) bytes")
        } catch {
            throw RequestProblem(status: 400, message: "cannot read the body: \(error)")
        }
    }

    private static func answer(status: HTTPResponse.Status, _ body: () async throws(RequestProblem) -> JobStatus) async throws -> Response {
        do { return encoded(try await body(), status: status) } catch { return problem(error) }
    }

    static func problem(_ p: RequestProblem) -> Response {
        var response = json(["error": p.message], status: .init(code: p.status))
        // A full service: a job may well end within this.
        if p.status == 429 { response.headers[.retryAfter] = "30" }
        return response
    }

    static func json(_ object: [String: String], status: HTTPResponse.Status = .ok) -> Response { encoded(object, status: status) }

    static func encoded(_ value: some Encodable, status: HTTPResponse.Status) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: data)))
    }
}

/// `Authorization: Bearer <token>` on every request it guards, the token as its file holds it
/// now; anything else is 401.
struct BearerToken<Context: RequestContext>: RouterMiddleware {
    let tokens: TokenFile

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let given = request.headers[.authorization] ?? ""
        let token = await tokens.current()
        guard let token, given.hasPrefix("Bearer "), Self.same(Array(given.utf8.dropFirst(7)), Array(token.utf8)) else {
            var response = ServiceRoutes.problem(RequestProblem(status: 401, message: "a bearer token is required (Authorization: Bearer …)"))
            response.headers[.wwwAuthenticate] = "Bearer"
            return response
        }
        return try await next(request, context)
    }

    /// Compares in time independent of where the first difference is.
    static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var diff = UInt8(a.count == b.count ? 0 : 1)
        for i in 0..<max(a.count, b.count) { diff |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0) }
        return diff == 0
    }
}

/// Whether Janus answers: a session created and destroyed, at most every 2 s (probes are
/// frequent; Janus need not see a session per probe).
actor Readiness {
    private let url: String
    private let options: JanusSession.Options
    private let log: Logger
    private var last: (at: ContinuousClock.Instant, problem: String?)?

    init(url: String, options: JanusSession.Options, logger: Logger) {
        self.url = url
        var o = options
        o.connectTimeout = .seconds(3)
        o.requestTimeout = .seconds(3)
        o.reclaimWindow = .zero
        self.options = o
        log = logger
    }

    /// nil if Janus is reachable, else why not.
    func check() async -> String? {
        if let last, ContinuousClock.now - last.at < .seconds(2) { return last.problem }
        var problem: String?
        do {
            let session = try await JanusSession.connect(url: url, options: options, logger: log)
            await session.close()
        } catch { problem = "Janus at \(url) is not reachable: \(error)" }
        last = (.now, problem)
        return problem
    }
}
