import Foundation
import Glibc
import Testing
import TestSupport
@testable import Service
import Logging
import Webhooks

extension ClusterWebhookTests {
    /// A delivery cancelled mid-post (an instance shutting down) frees its claim at once, for
    /// the other instances: the query that frees it runs in a task of its own, since one made
    /// from the cancelled task fails. The receiver takes the connection and never answers.
    @Test("a delivery cancelled while its post hangs frees the event's claim at once, not after the claim's hold")
    func cancelledDeliveryUnclaims() async throws {
        try await ClusterStoreTests.withServer { pg in
            let port = try RelayServers.freePort()
            // Listening, never accepting: the POST connects (the backlog) and waits for an answer.
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: in_port_t(UInt16(port).bigEndian),
                                      sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
            let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            #expect(bound == 0 && listen(fd, 8) == 0, "errno \(errno)")
            let s = try await Self.scene(pg, "cancel", port: port)
            defer { s.close() }
            try await s.a.enqueue(Self.event(.jobStarted, "rec-1", "rec-1.started.0"), job: "rec-1")
            let b = try s.delivery(s.b)
            let running = Task { await b.run(session: { 2 }, idle: .milliseconds(50), log: .init(label: "test")) }
            let claimed = await eventually(within: 10) { (try? await s.t.sql("SELECT claimed_by IS NOT NULL FROM tasks")) == "t" }
            #expect(claimed, "the event was claimed and its post is under way")
            try await Task.sleep(for: .milliseconds(300))
            running.cancel()
            await running.value
            let freed = try await s.t.sql("SELECT state = 'available' AND claimed_by IS NULL FROM tasks")
            #expect(freed == "t", "claimed by nobody once the delivery was cancelled, not held for its 60 s")
        }
    }

    /// Events told on the job manager's actor go to the state folder's task queue first (synced),
    /// and the task worker moves them into the database in their order: a job's end queued after
    /// them comes after them, and a SIGKILL before the move loses none.
    @Test("events queued on an instance's own disk survive its crash and reach the database in order, before the job's end")
    func localEventsMovedInOrder() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        try await ClusterStoreTests.withServer { pg in
            let s = try await Self.scene(pg, "inbox", port: 18675)
            defer { s.close() }
            let folder = s.dir.appendingPathComponent("state-a/tasks")
            let policy = TaskPolicy<DatabaseInstant>(schedule: Self.fast)
            let log = Logger(label: "test")
            let before = try LocalTaskQueue(directory: folder, policy: policy, logger: log)
            for (id, type) in [("rec-1.started.0", WebhookEventType.jobStarted), ("rec-1.paused.1", .jobPaused)] {
                try before.enqueue(NewTask(webhook: try Self.event(type, "rec-1", id), job: "rec-1"))
            }
            // The process dies before its worker moved them; started again on the same folder.
            let inbox = try LocalTaskQueue(directory: folder, policy: policy, logger: log)
            try await s.a.insert(id: "rec-1", spec: ClusterStoreTests.spec, created: Date())
            _ = try #require(try await s.a.claim(session: 1, grace: ClusterStoreTests.grace))
            var a = try s.delivery(s.a)
            a.inbox = inbox
            let receiver = try await s.receiver()
            #expect(try await a.round(session: 1) == 1, "both moved, the first tried")
            #expect(inbox.names.isEmpty)
            _ = try await s.a.end("rec-1", .init(state: .failed, ended: Date(), error: "the room was destroyed"), status: nil)
            #expect(try await s.t.sql("SELECT string_agg(key || ':' || seq, ' ' ORDER BY seq) FROM tasks")
                    == "rec-1.started.0:1 rec-1.paused.1:2 rec-1.failed:3")
            #expect(try await Self.deliver(a, session: 1) { s.deliveries().count >= 3 })
            #expect(s.delivered("rec-1") == ["rec-1.started.0", "rec-1.paused.1", "rec-1.failed"])
            await receiver.stop()
        }
    }
}
