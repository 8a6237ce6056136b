public import Foundation

/// The live servers `sfubot relay` is tested against, started inside the test namespace on
/// 127.0.0.1 like Janus: nginx with libnginx-mod-rtmp (deploy/nginx-rtmp/nginx.conf) and
/// srt-live-transmit (srt-tools) as an SRT relay, each stopped with SIGKILL by `stop()` (one
/// process each: nothing is left behind holding the port).
public enum RelayServers {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Why the servers cannot run here, or nil.
    public static var missing: String? {
        for tool in ["/usr/sbin/nginx", "/usr/lib/nginx/modules/ngx_rtmp_module.so", "/usr/bin/srt-live-transmit", "/usr/bin/ffmpeg", "/usr/bin/ffprobe"]
        where !FileManager.default.fileExists(atPath: tool) {
            return "\(tool) missing: run scripts/install-deps (nginx libnginx-mod-rtmp srt-tools ffmpeg)"
        }
        return nil
    }

    /// nginx-rtmp on 127.0.0.1:`port` with the `live` application: publish and play
    /// rtmp://127.0.0.1:port/live/NAME. Its config, pid file and log go into `dir`.
    /// With `tls`, nginx's own stream module (libnginx-mod-stream) also terminates TLS on
    /// 127.0.0.1:`tls.port` with that certificate and key and passes the bytes to the RTMP port:
    /// rtmps://127.0.0.1:tls.port/live/NAME, as a CDN's RTMPS ingest does it.
    public static func nginxRTMP(port: Int, tls: (port: Int, cert: String, key: String)? = nil, in dir: URL) async throws -> LocalServer {
        let run = dir.appendingPathComponent("nginx-\(port)")
        try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
        var template = try String(contentsOf: root.appendingPathComponent("deploy/nginx-rtmp/nginx.conf"), encoding: .utf8)
        if let tls {
            guard FileManager.default.fileExists(atPath: streamModule) else { throw LocalServer.NotListening(description: "\(streamModule) missing: run scripts/install-deps (libnginx-mod-stream)") }
            template = "load_module \(streamModule);\n" + template + """
                stream {
                    server {
                        listen 127.0.0.1:\(tls.port) ssl;
                        ssl_certificate \(tls.cert);
                        ssl_certificate_key \(tls.key);
                        proxy_pass 127.0.0.1:\(port);
                    }
                }

                """
        }
        let conf = run.appendingPathComponent("nginx.conf")
        try template.replacingOccurrences(of: "@PORT@", with: "\(port)").replacingOccurrences(of: "@RUN@", with: run.path)
            .write(to: conf, atomically: true, encoding: .utf8)
        return try await LocalServer.start(URL(fileURLWithPath: "/usr/sbin/nginx"),
                                           ["-p", run.path, "-e", run.appendingPathComponent("error.log").path, "-c", conf.path], port: port)
    }

    static let streamModule = "/usr/lib/nginx/modules/ngx_stream_module.so"

    /// srt-live-transmit as an SRT relay: takes a caller on 127.0.0.1:`port` (what the relay
    /// sends) and hands the stream to a caller on 127.0.0.1:`readPort` (the test's reader).
    public static func srt(port: Int, readPort: Int) async throws -> LocalServer {
        let process = try ChildProcess("/usr/bin/srt-live-transmit", ["-q", "srt://127.0.0.1:\(port)?mode=listener",
                                                                        "srt://127.0.0.1:\(readPort)?mode=listener"])
        let server = LocalServer(port: port, process: process)
        guard await eventually(within: 10, { isBoundUDP(port: port) || !process.isRunning }), process.isRunning else {
            await server.stop()
            throw LocalServer.NotListening(description: "srt-live-transmit did not bind 127.0.0.1:\(port): \(await process.finished().errText)")
        }
        return server
    }

    /// A free port on 127.0.0.1, TCP and UDP alike, and the `span` ports above it free too (RTP:
    /// audio on port, video on port + 2). Drawn above the kernel's ephemeral range (32768–60999)
    /// and Janus's RTP range (20000–40000): a port the kernel handed out and took back could be
    /// given to libnice's next UDP socket before the test binds it (one CI run: "Address already
    /// in use" on udpsrc).
    public static func freePort(span: Int = 0) throws -> Int {
        for _ in 0..<200 {
            let port = Int.random(in: 61000...(65535 - span))
            let free = (port...port + span).allSatisfy { canBind(port: $0, type: SOCK_STREAM) && canBind(port: $0, type: SOCK_DGRAM) }
            if free { return port }
        }
        throw PipelineRunError(message: "no free port on 127.0.0.1 in 61000–65535")
    }

    private static func canBind(port: Int, type: __socket_type) -> Bool {
        let fd = socket(AF_INET, Int32(type.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// Whether some socket is bound to UDP `port` (from /proc/net/udp, as the port is hex there).
    public static func isBoundUDP(port: Int) -> Bool {
        let hex = String(format: ":%04X ", port)
        let table = (try? String(contentsOfFile: "/proc/net/udp", encoding: .utf8)) ?? ""
        return table.split(whereSeparator: \.isNewline).dropFirst().contains { line in
            line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.map { "\($0) ".contains(hex) } ?? false
        }
    }
}
