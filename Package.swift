// swift-tools-version: 6.1
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "sfubot",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "sfubot", targets: ["sfubot"]),
        .executable(name: "sfubot-bench", targets: ["sfubot-bench"]),
        // The ECall backend stand-in as a process, for local runs (`swift run ecall-standin`).
        .executable(name: "ecall-standin", targets: ["ecall-standin"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
    ],
    targets: [
        // GStreamer's C API (Debian: libgstreamer1.0-dev, libgstreamer-plugins-base1.0-dev,
        // libgstreamer-plugins-bad1.0-dev).
        .systemLibrary(
            name: "CGStreamer",
            pkgConfig: "gstreamer-1.0 gstreamer-app-1.0 gstreamer-webrtc-1.0 gstreamer-sdp-1.0 gstreamer-pbutils-1.0",
            providers: [.apt(["libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev", "libgstreamer-plugins-bad1.0-dev"])]
        ),
        // libcrypto for the per-frame AES-256-GCM (Debian: libssl-dev).
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // Only what Swift cannot call: GLib varargs, macros, floating-ref rules.
        .target(name: "CGStreamerShims", dependencies: ["CGStreamer"]),
        // GIO's TLS trust (--tls-ca-file for rtmps://): the CLI's alone.
        .target(name: "CTLSTrust", dependencies: ["CGStreamer"], linkerSettings: [.linkedLibrary("gio-2.0")]),
        // What sfubot does behind GStreamer's plugins, in the libraries they loaded (libnice,
        // dlopen by soname): the receive buffer of webrtcbin's media sockets. GStreamerKit's
        // (PluginLibraries/, with the OpenSSL libsrtp2 preload).
        .target(name: "CPluginLibraries", dependencies: ["CGStreamer"]),
        // SRTP + ICE send for load publishers past webrtcbin's send chain, and the inline receive.
        // Uses the libsrtp2 and libnice GStreamer's plugins loaded (dlopen by soname); needs only
        // libsrtp2-dev's header. FastPath's alone.
        .target(name: "CDirectRTP", dependencies: ["CGStreamer"]),
        // The receive limit (sfubot-bench receive-limit): recvmmsg + libsrtp unprotect in C, the frame open in Swift.
        .target(name: "CReceiveLimit"),
        .target(name: "ReceiveLimit", dependencies: ["Locking", "FrameCrypto", "CReceiveLimit"], swiftSettings: strict),
        .target(
            name: "GStreamerKit",
            dependencies: ["Locking",
                "CGStreamer", "CGStreamerShims", "CPluginLibraries",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The one lock type: Synchronization's Mutex, or a pthread mutex TSan can see (`make tsan`).
        .target(name: "Locking", swiftSettings: strict),
        // Secret files (tokens, keys, credentials) read and written one way: regular, 0600, bounded.
        .target(name: "PrivateIO", swiftSettings: strict),
        // The load test's shortcuts past webrtcbin (direct SRTP send, inline receive, the RTP
        // payload consumer): LoadTest's, and Bot's for the recorder's opt-in `--receive-path
        // direct` (the inline receive only); no other command runs this code.
        .target(
            name: "FastPath",
            dependencies: ["GStreamerKit", "CGStreamer", "CGStreamerShims", "CDirectRTP"],
            swiftSettings: strict
        ),
        .target(
            name: "FrameCrypto",
            dependencies: ["Locking", 
                "COpenSSL", "PrivateIO", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // Signed, hash-chained recording manifests and their verification (swift-crypto only).
        .target(
            name: "Proof",
            dependencies: ["Locking", "PrivateIO", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
        // A client WebSocket of text messages in one subprotocol (Janus, STOMP), our own on
        // NIO: URLs read with URLComponents (IPv6 literals), TLS with SNI for names.
        .target(
            name: "TextWebSocket",
            dependencies: ["Locking", 
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict
        ),
        // Coming back after a loss: the one backoff, the comeback state machine and the one loop
        // that drives it on an injected Clock (Janus, Bot, ECallAgent, LoadTest, Spool use it).
        .target(name: "Comeback", swiftSettings: strict),
        .target(
            name: "Janus",
            dependencies: [
                "Comeback", "TextWebSocket", .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // A scriptable fake Janus (a JanusTransport whose far end a test drives): tests only.
        .target(name: "JanusTesting", dependencies: ["Locking", "Janus"], swiftSettings: strict),
        // The ECall backend's REST API (request signing, tokens, calls).
        .target(
            name: "ECall",
            dependencies: [
                "TextWebSocket",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // A STAND-IN for the ECall backend, for tests and local runs only: the REST subset the
        // bot uses, checking signatures and tokens as the real one does.
        .target(
            name: "ECallStandIn",
            dependencies: ["Locking", 
                "ECall",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(name: "ecall-standin", dependencies: ["ECallStandIn"], swiftSettings: strict),
        // Janus's own recordings (.mjr), offline: the reader, RTP and H.264 depacketizing, frames
        // opened with the call's keys, which files form one output, and a writer for tests. No
        // participant, no pipeline (GStreamerKit for `RTPPayload` only).
        .target(name: "Mjr", dependencies: ["FrameCrypto", "GStreamerKit"], swiftSettings: strict),
        .target(
            name: "Bot",
            dependencies: ["Locking",
                "GStreamerKit", "FrameCrypto", "Janus", "Comeback", "Proof", "Mjr",
                // The recorder's `--receive-path direct` (ReceiveInline).
                "FastPath",
                // Speaker streams' connections to their consumers (Relay/Speakers).
                "TextWebSocket",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                // HMAC-SHA1 for coturn's REST API TURN credentials (ICE/TURNSharedSecret).
                .product(name: "Crypto", package: "swift-crypto"),
                // turns: servers: sfubot's own TLS to them (ICE/TURNTLSBridge), libnice has none.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // `sfubot agent`: the bot as a full ECall participant.
        .target(
            name: "ECallAgent",
            dependencies: ["Locking", "Bot", "ECall", "FrameCrypto", "Janus", "Comeback", "Proof", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // `sfubot load`: many encrypted bots in one process sharing one encoder, measured.
        .target(
            name: "LoadTest",
            dependencies: ["Locking",
                "Bot", "GStreamerKit", "FastPath", "FrameCrypto", "Janus", "Comeback",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strict),
        // Prometheus `/metrics` for every command: the one place swift-metrics is bootstrapped
        // and served. Bot, Janus and LoadTest only emit through swift-metrics' API.
        .target(
            name: "Telemetry",
            dependencies: ["Locking", 
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // Durable work kept in a directory (one JSON file per entry, written atomically) and the
        // retry schedule: the task queue and the webhook outbox survive restarts through it.
        .target(name: "Spool", dependencies: ["Locking", "Comeback", .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        // S3-compatible object storage: our own SigV4 signer (no AWS SDK), PUT and multipart
        // uploads verified against the store's checksums (queued as tasks by Service).
        .target(
            name: "ObjectStore",
            dependencies: ["Locking", "PrivateIO",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strict),
        // Standard Webhooks: signed events delivered from a durable outbox.
        .target(
            name: "Webhooks",
            dependencies: ["Spool", "PrivateIO",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strict),
        // `sfubot serve`: recordings and playbacks as jobs behind an HTTP API.
        .target(
            name: "Service",
            dependencies: ["Locking", 
                "Bot", "FrameCrypto", "Janus", "Proof", "PrivateIO",
                // A finished recording uploaded, webhooks sent (JobPublishing.swift).
                "ObjectStore", "Webhooks", "Spool", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                // `--database`: jobs, owners and leases in PostgreSQL (Cluster/, docs/cluster.md).
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict,
            plugins: ["EmbedOpenAPI"]),
        // docs/openapi.json compiled into Service (one source for the document; no resource
        // bundle to install beside the binary).
        .executableTarget(name: "embed-text"),
        .plugin(name: "EmbedOpenAPI", capability: .buildTool(), dependencies: ["embed-text"]),
        .executableTarget(
            name: "sfubot",
            dependencies: ["Locking",
                "Bot", "FrameCrypto", "GStreamerKit", "Janus", "ECallAgent", "LoadTest", "Service", "Telemetry", "Proof", "PrivateIO", "Mjr",
                // serve's --storage and --webhook-url (Options/PublishingOptions.swift).
                "ObjectStore", "Webhooks", "CTLSTrust",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Benchmark (not a test): ns per frame seal/open next to `openssl speed`.
        .executableTarget(name: "sfubot-bench", dependencies: ["FrameCrypto", "ReceiveLimit", "Bot", "Mjr", "GStreamerKit", .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        .testTarget(
            name: "FrameCryptoTests",
            dependencies: ["Locking", "FrameCrypto", "ReceiveLimit", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict),
        .testTarget(name: "ProofTests", dependencies: ["Locking", "Proof"], swiftSettings: strict),
        .testTarget(name: "PrivateIOTests", dependencies: ["PrivateIO"], swiftSettings: strict),
        // The .mjr reader and frame recovery on files written in the test (no Janus, no pipeline).
        .testTarget(name: "MjrTests", dependencies: ["Mjr", "FrameCrypto"], swiftSettings: strict),
        .testTarget(name: "JanusTests", dependencies: ["Locking", "Janus", "JanusTesting", "Comeback", "Telemetry"], swiftSettings: strict),
        // The backoff, the comeback machine and its driver on a manual clock (no sleeping).
        .testTarget(name: "ComebackTests", dependencies: ["Comeback", "JanusTesting"], swiftSettings: strict),
        // GStreamerKit on its own (no Janus, no network); reads refcounts through the shims.
        .testTarget(name: "GStreamerKitTests", dependencies: ["GStreamerKit", "CGStreamer", "CGStreamerShims"], swiftSettings: strict),
        // FastPath on its own: the SRTP guard, the C parsers, the payload consumer.
        .testTarget(name: "FastPathTests", dependencies: ["Locking", "FastPath", "GStreamerKit", "CDirectRTP", "CGStreamer"], swiftSettings: strict),
        // What the integration tests share: the scene (the local Janus, rooms, the serialized
        // MediaScene every media test nests in), decoding and tone analysis, child processes,
        // the local RabbitMQ. Not a test target: the test targets below import it.
        .target(
            name: "TestSupport",
            dependencies: ["Locking", 
                "Bot", "GStreamerKit", "FrameCrypto", "Janus", "ECall", "ECallStandIn", "Telemetry",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Tests/TestSupport",
            swiftSettings: strict),
        .testTarget(
            name: "LoadTestTests",
            dependencies: [
                "Locking", "LoadTest", "Bot", "GStreamerKit", "FrameCrypto", "Janus", "JanusTesting", "Telemetry", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strict),
        // The service: its OpenAPI document, request parsing, confinement (no server), and the
        // `sfubot serve` process against the local Janus.
        .testTarget(
            name: "ServiceTests",
            dependencies: [
                "Service", "Bot", "FrameCrypto", "Janus", "TestSupport", "ObjectStore", "Webhooks", "Spool", "Proof",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strict),
        // The spool, the signer against botocore's, uploads against moto's S3 server (scripts/s3-venv).
        .testTarget(name: "SpoolTests", dependencies: ["Spool"], swiftSettings: strict),
        .testTarget(
            name: "ObjectStoreTests",
            dependencies: ["ObjectStore", "TestSupport", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict),
        // Signatures against the spec's vector and its Python library; the outbox against a receiver.
        .testTarget(name: "WebhooksTests", dependencies: ["Webhooks", "Spool", "TestSupport"], swiftSettings: strict),
        // The ECall client, STOMP (parsers, races, and against the local RabbitMQ).
        .testTarget(name: "ECallTests", dependencies: ["Locking", "ECall", "ECallStandIn", "FrameCrypto", "TestSupport"], swiftSettings: strict),
        // `sfubot agent` as an ECall participant (stand-in backend, RabbitMQ, Janus).
        .testTarget(
            name: "AgentTests",
            dependencies: ["Locking", 
                "ECallAgent", "Bot", "ECall", "ECallStandIn", "FrameCrypto", "GStreamerKit", "Janus", "Comeback", "Proof", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // Participants, recorder, player, faults, and the CLI process against the local Janus.
        .testTarget(
            name: "BotTests",
            dependencies: ["Locking", 
                "Bot", "GStreamerKit", "CGStreamer", "FrameCrypto", "Janus", "JanusTesting", "Telemetry", "Mjr", "TextWebSocket", "TestSupport", "Comeback",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strict
        ),
    ]
)

// libFuzzer targets for `make fuzz` (Sources/Fuzz*/, seeds in Tests/Fuzz/Corpus/). They have no
// main: libFuzzer's runs them, so they link only with `--sanitize fuzzer`. Declared only when
// SFUBOT_FUZZ is set (the Makefile builds them in .build/fuzz), so the normal build never
// compiles, links or sanitizes them.
if Context.environment["SFUBOT_FUZZ"] != nil {
    func fuzzTarget(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
        .executableTarget(name: name, dependencies: dependencies, swiftSettings: strict + [.unsafeFlags(["-parse-as-library"])])
    }
    package.targets += [
        .target(name: "FuzzSupport", swiftSettings: strict),
        fuzzTarget("FuzzAudioFrame", ["FrameCrypto", "FuzzSupport"]),
        fuzzTarget("FuzzVideoFrame", ["FrameCrypto", "FuzzSupport"]),
        fuzzTarget("FuzzNALUnits", ["FrameCrypto", "FuzzSupport"]),
        fuzzTarget("FuzzStomp", ["ECall", "FuzzSupport"]),
        fuzzTarget("FuzzJanus", ["Janus", "FuzzSupport"]),
        // The direct path's C RTP/RTCP parsers against GStreamerKit's RTPPayload.
        fuzzTarget("FuzzRTPHeader", ["CDirectRTP", "GStreamerKit", "FuzzSupport"]),
        fuzzTarget("FuzzMjr", ["Mjr", "FrameCrypto", "FuzzSupport"]),
    ]
}
