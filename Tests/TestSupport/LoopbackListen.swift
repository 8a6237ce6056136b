import Foundation

/// A listening TCP socket on 127.0.0.1 or ::1 at a free port: the fake servers of the tests.
public enum LoopbackListen {
    /// The socket and its port; the caller closes it.
    public static func open(ipv6: Bool = false, backlog: Int32) throws -> (fd: Int32, port: Int) {
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var storage = sockaddr_storage()
        var length = socklen_t(ipv6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
        withUnsafeMutableBytes(of: &storage) { raw in
            if ipv6 {
                let a = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                a.pointee.sin6_family = sa_family_t(AF_INET6)
                a.pointee.sin6_addr = in6addr_loopback
            } else {
                let a = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                a.pointee.sin_family = sa_family_t(AF_INET)
                a.pointee.sin_addr.s_addr = inet_addr("127.0.0.1")
            }
        }
        let bound = fd >= 0 && withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound, listen(fd, backlog) == 0 else {
            if fd >= 0 { close(fd) }
            throw PipelineRunError(message: "cannot listen on \(ipv6 ? "::1" : "127.0.0.1"): errno \(errno)")
        }
        let port = withUnsafeBytes(of: &storage) { raw in
            Int(UInt16(bigEndian: ipv6 ? raw.load(as: sockaddr_in6.self).sin6_port : raw.load(as: sockaddr_in.self).sin_port))
        }
        return (fd, port)
    }
}
