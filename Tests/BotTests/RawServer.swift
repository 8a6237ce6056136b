import Crypto
import Foundation
import Glibc
import Locking
import Synchronization
import Testing
import TestSupport

/// What an oversized message looks like on the wire (server frames are not masked).
enum Oversized: Sendable, CustomTestStringConvertible {
    /// A text message in 256 KiB fragments.
    case fragmented(bytes: Int)
    /// One text frame.
    case oneFrame(bytes: Int)

    var testDescription: String {
        switch self {
        case .fragmented(let n): "\(n >> 20) MiB in fragments"
        case .oneFrame(let n): "one \(n >> 20) MiB frame"
        }
    }

    var frames: [UInt8] {
        switch self {
        case .oneFrame(let n):
            return Self.frame(opcode: 1, fin: true, payload: [UInt8](repeating: 0x20, count: n))
        case .fragmented(let n):
            let piece = 256 << 10
            let count = n / piece
            var out: [UInt8] = []
            for i in 0..<count {
                out += Self.frame(opcode: i == 0 ? 1 : 0, fin: i == count - 1, payload: [UInt8](repeating: 0x20, count: piece))
            }
            return out
        }
    }

    static func frame(opcode: UInt8, fin: Bool, payload: [UInt8]) -> [UInt8] {
        var h: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        let n = payload.count
        if n < 126 {
            h.append(UInt8(n))
        } else if n < 65536 {
            h += [126, UInt8(n >> 8), UInt8(n & 0xFF)]
        } else {
            h.append(127)
            for shift in stride(from: 56, through: 0, by: -8) { h.append(UInt8((n >> shift) & 0xFF)) }
        }
        return h + payload
    }
}

/// A TCP listener on 127.0.0.1 or ::1 (a free port) whose connections the test scripts byte by
/// byte: the server a hostile Janus would be.
final class RawServer: Sendable {
    let port: Int
    private let listener: Int32
    private let connections = Locked<[Int32]>([])

    init(ipv6: Bool = false) throws {
        (listener, port) = try LoopbackListen.open(ipv6: ipv6, backlog: 4)
    }

    /// Accepts one connection on a thread of its own and runs `script` on it.
    func serve(_ script: @escaping @Sendable (Int32) -> Void) {
        let fd = listener
        Thread {
            let c = accept(fd, nil, nil)
            guard c >= 0 else { return }
            self.connections.withLock { $0.append(c) }
            script(c)
        }.start()
    }

    /// Closes the listener and every connection (a blocked accept or read returns).
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        // The script's thread may still be reading or writing: shut down, then close.
        for c in connections.withLock({ $0 }) {
            shutdown(c, Int32(SHUT_RDWR))
            close(c)
        }
    }

    /// Reads the HTTP upgrade request; nil if the connection ended first.
    static func readRequest(_ c: Int32) -> String? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !data.ends(with: Array("\r\n\r\n".utf8)) {
            let n = recv(c, &buffer, buffer.count, 0)
            guard n > 0 else { return nil }
            data += buffer[0..<n]
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Answers the WebSocket upgrade as Janus does (with its subprotocol).
    static func answerUpgrade(_ c: Int32) -> Bool { upgrade(c) != nil }

    /// Answers the WebSocket upgrade as Janus does; the client's request, nil if it had no key.
    static func upgrade(_ c: Int32) -> String? {
        guard let request = readRequest(c),
              let line = request.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("sec-websocket-key:") })
        else { return nil }
        let key = line.dropFirst("sec-websocket-key:".count).trimmingCharacters(in: .whitespaces)
        let accept = Data(Insecure.SHA1.hash(data: Data((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))).base64EncodedString()
        let response = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: \(accept)\r\nSec-WebSocket-Protocol: janus-protocol\r\n\r\n"
        return send(c, Array(response.utf8)) ? request : nil
    }

    /// Sends all of `bytes`; false once the client closed (no SIGPIPE).
    static func send(_ c: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }
}

extension Array where Element: Equatable {
    fileprivate func ends(with suffix: [Element]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
