import Foundation
import Testing
import TestSupport

/// Issue 44: at -vv PostgresNIO logged every backend message, the session's cancel key
/// (BackendKeyData: "processID: …, secretKey: …") among them.
extension MediaScene.ClusterTests {
    @Test("serve -vv --database: the log never holds PostgreSQL's cancel key")
    func traceLogHoldsNoCancelKey() async throws {
        let dir = try Scene.tempDirectory("cluster-log")
        let pg = try await LocalPostgres.start(port: 15443)
        let a = try await Self.serve("a", port: 18571, dir: dir, database: pg.url(), extra: ["-vv"])
        // The pool's connections and the instance's own session are open once it is ready.
        let ready = try await a.request("GET", "/readyz", auth: false)
        #expect(ready.status == 200, "\(ready.text)")
        a.process.signal(SIGTERM)
        let log = await a.process.finished().errText
        await pg.stop()
        #expect(log.contains("cluster: instance a"), "the log is serve's: \(log.suffix(500))")
        #expect(!log.contains("secretKey") && !log.contains("BackendKeyData"), "the cancel key is logged")
    }
}
