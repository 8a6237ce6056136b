public import Foundation

/// Faults injected on purpose, inside the test's private network namespace (scripts/in-netns;
/// shared/PITFALLS.md, "Breaking things on purpose"). Each one is checked to have happened:
/// a fault that silently did nothing would make any reconnection look perfect.
public enum Faults {
    public struct Failed: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// Aborts every established client TCP connection to 127.0.0.1:`port` (the bots'
    /// WebSockets to a Janus), as a network that drops them would: `ss -K` destroys the
    /// sockets in the kernel, the client sees ECONNABORTED and Janus a reset. Only
    /// connections *to* that port are matched, so Janus's listening socket and every other
    /// test's connections stay. Returns how many it killed; throws if there was none, or if
    /// one of them is still there after.
    public static func killWebSockets(port: Int) async throws -> Int {
        let filter = ["state", "established", "dst", "127.0.0.1", "dport", "=", "\(port)"]
        let before = try await connections(filter)
        guard !before.isEmpty else { throw Failed(message: "no connection to 127.0.0.1:\(port) to kill") }
        let run = try await ChildProcess.run("/usr/bin/ss", ["-K", "-t", "-n", "-H"] + filter)
        // ss prints each socket it destroyed; its status says little (it fails on sockets it
        // may not destroy), so what counts is which sockets are gone.
        let killed = localAddresses(run.outText)
        let after = try await connections(filter)
        let survivors = before.intersection(after)
        guard survivors.isEmpty else {
            throw Failed(message: "ss -K left \(survivors.sorted()) connected to :\(port) (status \(run.status): \(run.errText))")
        }
        return killed.isEmpty ? before.count : killed.count
    }

    /// Drops every UDP packet from and to `ports` (one Janus's RTP range, never all UDP: other
    /// tests run in the same namespace) for `duration`, with two iptables INPUT rules (all
    /// traffic between local addresses passes INPUT on `lo`; tc netem on ice0 sees none of it).
    /// The rules are removed on every path, cancellation and errors included, and checked gone.
    @discardableResult
    public static func dropUDP(ports: ClosedRange<Int>, for duration: Duration) async throws -> Drop {
        guard ports.lowerBound >= 1024, ports.count <= 1000 else {
            throw Failed(message: "refusing to drop UDP on \(ports): give one Janus's own RTP range")
        }
        let range = "\(ports.lowerBound):\(ports.upperBound)"
        let rules = [["-p", "udp", "--dport", range, "-j", "DROP"], ["-p", "udp", "--sport", range, "-j", "DROP"]]
        var added: [[String]] = []
        func removeAdded() async -> [String] {
            var failures: [String] = []
            for rule in added.reversed() {
                let r = try? await iptables(["-D", "INPUT"] + rule)
                if r?.status != 0 { failures.append("\(rule.joined(separator: " ")): \(r?.errText ?? "iptables did not run")") }
            }
            added = []
            return failures
        }
        let dropped: Int, cut: Date
        do {
            for rule in rules {
                let r = try await iptables(["-I", "INPUT"] + rule)
                guard r.status == 0 else { throw Failed(message: "iptables -I INPUT \(rule.joined(separator: " ")) failed: \(r.errText)") }
                added.append(rule)
            }
            cut = Date()
            for rule in rules {
                guard try await isPresent(rule) else { throw Failed(message: "iptables rule \(rule.joined(separator: " ")) was not in INPUT after adding it") }
            }
            try await Task.sleep(for: duration)
            dropped = try await droppedPackets(range)
        } catch {
            _ = await removeAdded()
            throw error
        }
        let failures = await removeAdded()
        let restored = Date()
        guard failures.isEmpty else { throw Failed(message: "could not remove iptables rules: \(failures)") }
        for rule in rules {
            guard try await !isPresent(rule) else { throw Failed(message: "iptables rule \(rule.joined(separator: " ")) still in INPUT after removing it") }
        }
        return Drop(packets: dropped, cut: cut, restored: restored)
    }

    /// Refuses every new and open TCP connection to 127.0.0.1:`port` (a reset for each packet
    /// sent to it: a store that is down, without losing what the server holds) until
    /// `allowTCP(port:)`. Checked in place.
    public static func refuseTCP(port: Int) async throws { try await insertInput(tcpRule(port)) }

    /// Undoes `refuseTCP(port:)`; checked gone.
    public static func allowTCP(port: Int) async throws { try await removeInput(tcpRule(port)) }

    /// Drops every RTCP sender report (a UDP compound whose first packet type is 200) in the
    /// namespace until `allowSenderReports`: no receiver can sync its streams.
    public static func dropSenderReports() async throws { try await insertInput(senderReportRule) }

    public static func allowSenderReports() async throws { try await removeInput(senderReportRule) }

    private static let senderReportRule = ["-p", "udp", "-m", "u32", "--u32", "0>>22&0x3C@8>>16&0xFF=0xC8", "-j", "DROP"]

    private static func tcpRule(_ port: Int) -> [String] { ["-p", "tcp", "--dport", "\(port)", "-j", "REJECT", "--reject-with", "tcp-reset"] }

    /// Drops every TCP packet sent to 127.0.0.1:`port` until `releaseTCP(port:)`: a client's
    /// connect neither succeeds nor fails, it resends its SYN (after 1 s, then 3 s) and gets
    /// through once released. Checked in place.
    public static func holdTCP(port: Int) async throws { try await insertInput(holdRule(port)) }

    /// Undoes `holdTCP(port:)`; checked gone.
    public static func releaseTCP(port: Int) async throws { try await removeInput(holdRule(port)) }

    /// Puts `rule` first in INPUT; checked in place.
    private static func insertInput(_ rule: [String]) async throws {
        let r = try await iptables(["-I", "INPUT"] + rule)
        guard r.status == 0 else { throw Failed(message: "iptables -I INPUT \(rule.joined(separator: " ")) failed: \(r.errText)") }
        guard try await isPresent(rule) else { throw Failed(message: "iptables rule \(rule.joined(separator: " ")) was not in INPUT after adding it") }
    }

    /// Takes every copy of `rule` out of INPUT; checked gone.
    private static func removeInput(_ rule: [String]) async throws {
        for _ in 0..<5 where try await isPresent(rule) { _ = try await iptables(["-D", "INPUT"] + rule) }
        guard try await !isPresent(rule) else { throw Failed(message: "iptables rule \(rule.joined(separator: " ")) still in INPUT after removing it") }
    }

    private static func holdRule(_ port: Int) -> [String] { ["-p", "tcp", "--dport", "\(port)", "-j", "DROP"] }

    /// What `dropUDP` did: packets its rules dropped, when both rules were in and when both
    /// were out again (each a few ms after the iptables command that did it returned).
    public struct Drop: Sendable {
        public var packets: Int
        public var cut: Date
        public var restored: Date
    }

    /// Whether something takes TCP connections on 127.0.0.1:`port` (a refused local connect
    /// returns at once, so this never waits).
    public static func isListening(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &addr) { a in
            a.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    // MARK: - Tools

    /// The local address:port of each connection `ss` lists for `filter`.
    private static func connections(_ filter: [String]) async throws -> Set<String> {
        let run = try await ChildProcess.run("/usr/bin/ss", ["-t", "-n", "-H"] + filter)
        guard run.status == 0 else { throw Failed(message: "ss failed (\(run.status)): \(run.errText)") }
        return localAddresses(run.outText)
    }

    /// `ss -t -n -H` lines end with the local and the peer address.
    private static func localAddresses(_ text: String) -> Set<String> {
        Set(text.split(whereSeparator: \.isNewline).compactMap { line in
            let fields = line.split(whereSeparator: \.isWhitespace)
            return fields.count >= 2 ? String(fields[fields.count - 2]) : nil
        })
    }

    private static let iptablesPath = ["/usr/sbin/iptables", "/sbin/iptables"].first { FileManager.default.isExecutableFile(atPath: $0) }

    private static func iptables(_ args: [String]) async throws -> ChildProcess.Finished {
        guard let path = iptablesPath else { throw Failed(message: "iptables is not installed (scripts/install-deps installs it)") }
        // -w: wait for the xtables lock rather than fail if another iptables holds it.
        return try await ChildProcess.run(path, ["-w"] + args)
    }

    /// Whether either of `dropUDP`'s rules for `ports` is in INPUT.
    public static func dropping(ports: ClosedRange<Int>) async throws -> Bool {
        let range = "\(ports.lowerBound):\(ports.upperBound)"
        for rule in [["-p", "udp", "--dport", range, "-j", "DROP"], ["-p", "udp", "--sport", range, "-j", "DROP"]] where try await isPresent(rule) {
            return true
        }
        return false
    }

    private static func isPresent(_ rule: [String]) async throws -> Bool {
        try await iptables(["-C", "INPUT"] + rule).status == 0
    }

    /// Packets counted by the INPUT rules matching `range` as source or destination ports.
    private static func droppedPackets(_ range: String) async throws -> Int {
        let r = try await iptables(["-L", "INPUT", "-v", "-x", "-n"])
        guard r.status == 0 else { throw Failed(message: "iptables -L failed: \(r.errText)") }
        return r.outText.split(whereSeparator: \.isNewline)
            .filter { $0.contains("dpts:\(range)") || $0.contains("spts:\(range)") }
            .compactMap { Int($0.split(whereSeparator: \.isWhitespace).first ?? "") }
            .reduce(0, +)
    }
}
