import Foundation

/// A TCP port on 127.0.0.1 that takes connections (the kernel's backlog) and never answers.
public final class SilentListener {
    public let port: Int
    private let fd: Int32

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) { a in
            a.withMemoryRebound(to: sockaddr.self, capacity: 1) { s in
                bind(fd, s, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, s, &length) == 0
            }
        }
        guard fd >= 0, bound else {
            let failure = errno
            close(fd)
            throw PipelineRunError(message: "cannot listen on 127.0.0.1: errno \(failure)")
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: addr.sin_port))
    }

    private var accepted: [Int32] = []

    /// Whether a client connected within `limit` (the connection is kept open, never answered).
    public func waitForConnection(within limit: Duration) async -> Bool {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        let end = ContinuousClock.now + limit
        while ContinuousClock.now < end {
            let client = accept(fd, nil, nil)
            if client >= 0 {
                accepted.append(client)
                return true
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    deinit {
        accepted.forEach { close($0) }
        close(fd)
    }
}
