import Foundation
import Testing
import TestSupport

/// `sfubot serve`'s other bounds (issue 25): the Janus servers a job may name, FIFOs that must
/// not hold the service, the number of jobs, the token file read again when it changes.
extension MediaScene {
@Suite struct ServeLimitsTests {
    /// A TCP listener on 127.0.0.1 (or ::1) that never accepts: `pending` says whether anyone connected.
    final class Listener {
        let fd: Int32
        let port: Int
        init(ipv6: Bool = false) throws {
            (fd, port) = try LoopbackListen.open(ipv6: ipv6, backlog: 16)
        }
        /// Whether a connection is waiting to be accepted (polled, not accepted).
        var pending: Bool {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            return poll(&p, 1, 0) > 0
        }
        deinit { close(fd) }
    }

    @Test("a job naming a Janus not allowed gets 400 before any connection; an allowed one (IPv4, or an IPv6 literal in another spelling) is connected to and fails with no reason in lastError")
    func janusAllowList() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("serve-janus")
        let stranger = try Listener(), stranger6 = try Listener(ipv6: true)
        let allowed = try Listener(), allowed6 = try Listener(ipv6: true)
        let serve = try await ServeProcess.start(port: 18492, in: dir, extra: [
            "--janus-allow", "ws://127.0.0.1:\(allowed.port)", "--janus-allow", "ws://[::1]:\(allowed6.port)",
            "--api-secret", "s3cret", "--rejoin-timeout", "0",
        ])
        defer { serve.process.signal(SIGKILL) }
        for url in ["ws://127.0.0.1:\(stranger.port)", "ws://localhost:\(stranger.port)/", "ws://x@127.0.0.1:\(stranger.port)",
                    "ws://[::1]:\(stranger6.port)", "ws://[::2]:\(allowed6.port)", "ws://[::ffff:127.0.0.1]:\(allowed.port)",
                    "ws://[fe80::1%25lo]:\(allowed6.port)", "wss://127.0.0.1:\(stranger.port)"] {
            let r = try await serve.request("POST", "/v1/recordings", json: ["room": room, "key": ["none": true], "out": "r-\(UUID().uuidString.prefix(6))", "janus": url])
            print("serve janus: \(url) → \(r.status) \(r.text)")
            #expect(r.status == 400 && r.text.contains("janus"), "\(url): \(r.text)")
        }
        try await Task.sleep(for: .seconds(1))
        #expect(!stranger.pending && !stranger6.pending, "no connection reached the Janus not allowed")

        // The IPv6 literal allowed as [::1], named in its long form: the same address, allowed.
        let r6 = try await serve.request("POST", "/v1/recordings", json: ["room": room, "key": ["none": true], "out": "allowed6", "janus": "ws://[0:0:0:0:0:0:0:1]:\(allowed6.port)"])
        #expect(r6.status == 201, "\(r6.text)")

        // Allowed: connected to (the listener sees it), but the job only says Janus could not be reached.
        let r = try await serve.request("POST", "/v1/recordings", json: ["room": room, "key": ["none": true], "out": "allowed", "janus": "ws://127.0.0.1:\(allowed.port)"])
        #expect(r.status == 201, "\(r.text)")
        let id = try #require(try r.json()["id"] as? String)
        let failed = try await serve.waitFor("/v1/recordings/\(id)", within: .seconds(40)) { ($0["lastError"] as? String) != nil }
        let lastError = failed["lastError"] as? String ?? ""
        print("serve janus: allowed Janus that never answers → lastError \(lastError)")
        #expect(allowed.pending, "the allowed Janus was connected to")
        #expect(allowed6.pending, "the allowed Janus on [::1] was connected to")
        #expect(lastError.contains("could not be reached"), "\(failed)")
        #expect(!lastError.lowercased().contains("handshake") && !lastError.lowercased().contains("refused"), "\(lastError)")
        serve.process.signal(SIGTERM)
        #expect(await serve.process.exit(within: .seconds(30)) == 0)
    }

    @Test("two playbacks of a FIFO and a FIFO key file are refused at once, /healthz answering meanwhile", .timeLimit(.minutes(2)))
    func fifosDoNotBlock() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("serve-fifo")
        for name in ["a.fifo", "b.fifo", "key.fifo"] { #expect(mkfifo(dir.appendingPathComponent(name).path, 0o600) == 0) }
        let serve = try await ServeProcess.start(port: 18493, in: dir)
        defer { serve.process.signal(SIGKILL) }
        async let a = serve.request("POST", "/v1/playbacks", json: ["room": room, "key": ["none": true], "file": "a.fifo"])
        async let b = serve.request("POST", "/v1/playbacks", json: ["room": room, "key": ["none": true], "file": "b.fifo"])
        async let k = serve.request("POST", "/v1/playbacks", json: ["room": room, "key": ["file": "key.fifo"], "file": "a.fifo"])
        let started = ContinuousClock.now
        let health = try await serve.request("GET", "/healthz", auth: false)
        let took = ContinuousClock.now - started
        let answers = try await [a, b, k]
        print("serve fifo: /healthz \(health.status) in \(took) beside two FIFO playbacks; answers \(answers.map { "\($0.status) \($0.text)" })")
        #expect(health.status == 200)
        for (answer, field) in zip(answers, ["file", "file", "key.file"]) {
            #expect(answer.status == 400 && answer.text.contains("\(field):") && answer.text.contains("FIFO"), "\(answer.text)")
        }
        #expect(try await serve.request("GET", "/healthz", auth: false).status == 200)
        serve.process.signal(SIGTERM)
        #expect(await serve.process.exit(within: .seconds(30)) == 0)
    }

    @Test("12 POSTs at once with --max-jobs 2: two started, the others 429 with Retry-After; /readyz 503, the free capacity gauge 0")
    func maxJobs() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("serve-max")
        let serve = try await ServeProcess.start(port: 18494, in: dir, extra: ["--max-jobs", "2"])
        defer { serve.process.signal(SIGKILL) }
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<12 {
                group.addTask { try await serve.request("POST", "/v1/recordings", json: ["room": room, "key": ["none": true], "out": "r\(i)"]).status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        print("serve max-jobs: 12 POSTs at once → \(statuses.sorted())")
        #expect(statuses.filter { $0 == 201 }.count == 2 && statuses.filter { $0 == 429 }.count == 10, "\(statuses)")
        let third = try await serve.request("POST", "/v1/playbacks", json: ["room": room, "key": ["none": true], "file": "none.wav"])
        print("serve max-jobs: third job → \(third.status) Retry-After \(third.header("Retry-After") ?? "none"): \(third.text)")
        #expect(third.status == 429 && third.header("Retry-After") != nil)
        let ready = try await serve.request("GET", "/readyz", auth: false)
        #expect(ready.status == 503 && ready.text.contains("max-jobs"), "\(ready.text)")
        try await Task.sleep(for: .milliseconds(1500))
        #expect(try await serve.metric("sfubot_jobs_capacity_free") == 0)
        serve.process.signal(SIGTERM)
        #expect(await serve.process.exit(within: .seconds(30)) == 0)
    }

    @Test("a body that stops arriving is answered 408 after 10 s, and the service answers on", .timeLimit(.minutes(1)))
    func slowBody() async throws {
        let dir = try Scene.tempDirectory("serve-slow")
        let serve = try await ServeProcess.start(port: 18497, in: dir)
        defer { serve.process.signal(SIGKILL) }
        let head = "POST /v1/recordings HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(serve.token)\r\n"
            + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"room\": "
        let port = serve.port
        let started = ContinuousClock.now
        // A blocking socket on a thread of its own: never on the cooperative pool.
        let answer: String = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_addr.s_addr = inet_addr("127.0.0.1")
                address.sin_port = UInt16(port).bigEndian
                var timeout = timeval(tv_sec: 30, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
                var text = "not connected"
                if connected == 0 {
                    _ = head.utf8CString.withUnsafeBufferPointer { send(fd, $0.baseAddress, $0.count - 1, 0) }
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    let n = recv(fd, &buffer, buffer.count, 0)
                    text = n > 0 ? String(decoding: buffer[..<n], as: UTF8.self) : "closed (\(n))"
                }
                close(fd)
                continuation.resume(returning: text)
            }
        }
        let took = ContinuousClock.now - started
        print("serve slow body: \(answer.split(separator: "\r\n").first ?? "") after \(took)")
        #expect(answer.hasPrefix("HTTP/1.1 408"), "\(answer)")
        #expect(took >= .seconds(9) && took < .seconds(20))
        #expect(try await serve.request("GET", "/healthz", auth: false).status == 200)
        serve.process.signal(SIGTERM)
        #expect(await serve.process.exit(within: .seconds(30)) == 0)
    }

    @Test("the token file is read again when it changes and on SIGHUP: the old token then gets 401, the new one 200")
    func tokenRotation() async throws {
        let dir = try Scene.tempDirectory("serve-token")
        let serve = try await ServeProcess.start(port: 18495, in: dir)
        defer { serve.process.signal(SIGKILL) }
        /// Rewrites the file in place (mode kept 0600), as `openssl rand -hex 32 > token` does.
        func rewrite(_ token: String) throws {
            let fd = open(serve.tokenFile.path, O_WRONLY | O_TRUNC)
            #expect(fd >= 0)
            _ = token.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
            close(fd)
        }
        #expect(try await serve.request("GET", "/v1/recordings").status == 200)
        let second = String(repeating: "b2", count: 20)
        try rewrite(second + "\n")
        try await Task.sleep(for: .milliseconds(1100))
        let old = try await serve.request("GET", "/v1/recordings").status
        let new = try await serve.request("GET", "/v1/recordings", token: second).status
        print("serve token: file changed → old token \(old), new token \(new)")
        #expect(old == 401 && new == 200)

        // SIGHUP: read at once, though the once-a-second check is not due (a request just made it).
        #expect(try await serve.request("GET", "/v1/recordings", token: second).status == 200)
        let third = String(repeating: "c3", count: 20)
        try rewrite(third)
        serve.process.signal(SIGHUP)
        try await Task.sleep(for: .milliseconds(300))
        let afterHup = try await serve.request("GET", "/v1/recordings", token: third).status
        let secondAfterHup = try await serve.request("GET", "/v1/recordings", token: second).status
        print("serve token: SIGHUP → new token \(afterHup), previous \(secondAfterHup)")
        #expect(afterHup == 200 && secondAfterHup == 401)

        // A file that no longer holds a valid token opens nothing.
        try rewrite("short")
        serve.process.signal(SIGHUP)
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await serve.request("GET", "/v1/recordings", token: third).status == 401)
        #expect(try await serve.request("GET", "/healthz", auth: false).status == 200)
        serve.process.signal(SIGTERM)
        #expect(await serve.process.exit(within: .seconds(30)) == 0)
    }
}
}

extension MediaScene.ServeLimitsTests {
    @Test("lists come a page at a time (limit, after, Next-After); finished jobs are forgotten after --keep-finished, their files kept")
    func pagesAndPruning() async throws {
        let dir = try Scene.tempDirectory("serve-pages")
        let serve = try await ServeProcess.start(port: 18496, in: dir, extra: ["--keep-finished", "8", "--rejoin-timeout", "0"])
        defer { serve.process.signal(SIGKILL) }
        var ids: [String] = []
        for i in 0..<3 {
            // Room 1 does not exist: the job fails at its join, and is then a finished job.
            let r = try await serve.request("POST", "/v1/recordings", json: ["room": 999_000_001 + i, "key": ["none": true], "out": "p\(i)"])
            #expect(r.status == 201, "\(r.text)")
            ids.append(try #require(try r.json()["id"] as? String))
        }
        let first = try await serve.request("GET", "/v1/recordings?limit=2")
        #expect(try first.list().compactMap { $0["id"] as? String } == Array(ids.prefix(2)))
        #expect(first.header("Next-After") == ids[1], "\(first.headers)")
        let second = try await serve.request("GET", "/v1/recordings?limit=2&after=\(ids[1])")
        #expect(try second.list().compactMap { $0["id"] as? String } == [ids[2]] && second.header("Next-After") == nil)
        #expect(try await serve.request("GET", "/v1/recordings?limit=0").status == 400)
        #expect(try await serve.request("GET", "/v1/recordings?after=rec-none").status == 400)

        for id in ids { _ = try await serve.waitFor("/v1/recordings/\(id)") { $0["state"] as? String == "failed" } }
        let state = serve.stateDir.appendingPathComponent("jobs")
        #expect(try FileManager.default.contentsOfDirectory(atPath: state.path).filter { $0.hasSuffix(".json") }.count == 3)
        let deadline = ContinuousClock.now + .seconds(25)
        var left = ids.count
        while ContinuousClock.now < deadline, left > 0 {
            try await Task.sleep(for: .milliseconds(500))
            left = try await serve.request("GET", "/v1/recordings").list().count
        }
        print("serve pages: \(ids.count) failed jobs, \(left) listed after --keep-finished 8")
        #expect(left == 0)
        #expect(try await serve.request("GET", "/v1/recordings/\(ids[0])").status == 404)
        #expect(try FileManager.default.contentsOfDirectory(atPath: state.path).filter { $0.hasSuffix(".json") }.isEmpty)
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("p0").path), "the recording's folder stays")
        serve.process.signal(SIGTERM)
        #expect(await serve.process.exit(within: .seconds(30)) == 0)
    }
}
