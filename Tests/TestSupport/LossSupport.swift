import Foundation

extension Faults {
    /// Runs `body` while an iptables INPUT rule drops, at random, `percent` % of the UDP packets
    /// of at least `minLength` bytes sent *to* `ports` (one Janus's own RTP range): a lossy uplink
    /// for the publishers' video. Janus's media to subscribers (sent from those ports), its RTCP
    /// to publishers, audio and other tests' traffic pass. The rule is removed on every path,
    /// errors and cancellation included, and checked gone. Returns `body`'s result and the
    /// packets the rule dropped.
    public static func withUplinkLoss<T>(to ports: ClosedRange<Int>, percent: Double, minLength: Int = 400,
                                         _ body: () async throws -> T) async throws -> (result: T, dropped: Int) {
        try await withLoss("--dport", ports, percent: percent, minLength: minLength, body)
    }

    /// The same, for the UDP packets of at least `minLength` bytes sent *from* `ports` (one
    /// Janus's own RTP range): a lossy downlink for what Janus forwards to subscribers (and its
    /// retransmissions), while what publishers send to Janus passes.
    public static func withDownlinkLoss<T>(from ports: ClosedRange<Int>, percent: Double, minLength: Int = 400,
                                           _ body: () async throws -> T) async throws -> (result: T, dropped: Int) {
        try await withLoss("--sport", ports, percent: percent, minLength: minLength, body)
    }

    private static func withLoss<T>(_ side: String, _ ports: ClosedRange<Int>, percent: Double, minLength: Int,
                                     _ body: () async throws -> T) async throws -> (result: T, dropped: Int) {
        guard ports.lowerBound >= 1024, ports.count <= 1000 else {
            throw Failed(message: "refusing to drop UDP of \(ports): give one Janus's own RTP range")
        }
        let rule = ["-p", "udp", side, "\(ports.lowerBound):\(ports.upperBound)", "-m", "length", "--length", "\(minLength):65535",
                    "-m", "statistic", "--mode", "random", "--probability", String(format: "%.4f", percent / 100), "-j", "DROP"]
        let added = try await lossIptables(["-I", "INPUT"] + rule)
        guard added.status == 0 else { throw Failed(message: "iptables -I INPUT \(rule.joined(separator: " ")) failed: \(added.errText)") }
        func remove() async throws -> Int {
            let listed = try await lossIptables(["-L", "INPUT", "-v", "-x", "-n"])
            let dropped = listed.outText.split(whereSeparator: \.isNewline).filter { $0.contains("statistic mode random") }
                .compactMap { Int($0.split(whereSeparator: \.isWhitespace).first ?? "") }.reduce(0, +)
            let removed = try await lossIptables(["-D", "INPUT"] + rule)
            guard removed.status == 0, try await lossIptables(["-C", "INPUT"] + rule).status != 0 else {
                throw Failed(message: "could not remove iptables rule \(rule.joined(separator: " ")): \(removed.errText)")
            }
            return dropped
        }
        let result: T
        do { result = try await body() } catch {
            _ = try? await remove()
            throw error
        }
        return (result, try await remove())
    }

    private static func lossIptables(_ args: [String]) async throws -> ChildProcess.Finished {
        guard let path = ["/usr/sbin/iptables", "/sbin/iptables"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw Failed(message: "iptables is not installed (scripts/install-deps installs it)")
        }
        // -w: wait for the xtables lock rather than fail if another iptables holds it.
        return try await ChildProcess.run(path, ["-w"] + args)
    }
}
