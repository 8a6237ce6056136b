import Foundation
import Testing
import TestSupport

/// The deployment files under deploy/ as an operator would check them before using them:
/// systemd's own verifier on the unit, the Kubernetes schemas on the manifests, and the
/// dashboard's queries against the metric names sfubot exports. No Janus needed.
@Suite struct DeploymentTests {
    /// The repository root (this file is Tests/BotTests/DeploymentTests.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func tool(_ name: String) -> String? {
        for dir in ["/usr/bin", "/bin", "/usr/local/bin"] where FileManager.default.isExecutableFile(atPath: "\(dir)/\(name)") {
            return "\(dir)/\(name)"
        }
        return nil
    }

    /// The unit as installed, except that ExecStart names the sfubot this test run built:
    /// `systemd-analyze verify` refuses a unit whose binary does not exist.
    static func unitForVerify() throws -> URL {
        let text = try String(contentsOf: root.appendingPathComponent("deploy/systemd/sfubot.service"), encoding: .utf8)
        #expect(text.contains("ExecStart=/usr/local/bin/sfubot serve "), "the installed unit runs /usr/local/bin/sfubot serve")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-unit-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let unit = dir.appendingPathComponent("sfubot.service")
        try text.replacingOccurrences(of: "/usr/local/bin/sfubot", with: MediaScene.CLITests.binary.path)
            .write(to: unit, atomically: true, encoding: .utf8)
        return unit
    }

    @Test("deploy/systemd/sfubot.service passes `systemd-analyze verify` with no warning, and its exposure score is low",
          .enabled(if: DeploymentTests.tool("systemd-analyze") != nil, "needs systemd-analyze (Debian: systemd)"))
    func systemdUnitVerifies() async throws {
        let unit = try Self.unitForVerify()
        defer { try? FileManager.default.removeItem(at: unit.deletingLastPathComponent()) }
        let verify = try await ChildProcess.run(Self.tool("systemd-analyze")!, ["verify", unit.path])
        // verify exits 0 on an unknown or misspelt setting and only warns ("Unknown key name",
        // "Failed to parse ..., ignoring"): any line about our unit is a failure.
        let complaints = (verify.outText + verify.errText).split(separator: "\n").filter { $0.contains("sfubot") }
        #expect(verify.status == 0 && complaints.isEmpty, "systemd-analyze verify: \(verify.outText)\(verify.errText)")

        let security = try await ChildProcess.run(Self.tool("systemd-analyze")!, ["security", "--offline=yes", "--no-pager", unit.path])
        let summary = security.outText.split(separator: "\n").last { $0.contains("Overall exposure level") }
        print("systemd-analyze security: \(summary ?? "no summary")")
        let score = summary.flatMap { line in line.split(separator: ":").last?.split(separator: " ").first.flatMap { Double($0) } }
        #expect(score != nil, "no exposure score in: \(security.outText.suffix(300)) \(security.errText)")
        // 0 is a unit with no access at all, 10 one with no sandbox; 1.1 measured at writing.
        #expect((score ?? 10) <= 2.0, "exposure \(score ?? -1) above 2.0: a hardening line was lost")
    }

    @Test("deploy/kubernetes passes scripts/validate-k8s (Kubernetes schemas strict, ServiceMonitor CRD schema, serve's probes and ports)")
    func kubernetesManifestsValidate() async throws {
        let r = try await ChildProcess.run(Self.root.appendingPathComponent("scripts/validate-k8s").path, [])
        #expect(r.status == 0, "validate-k8s: \(r.outText)\(r.errText)")
    }

    /// Every metric sfubot exports (serve and load), as the dashboard may query them.
    static let knownMetrics: Set<String> = [
        "sfubot_frames_opened_total", "sfubot_frames_sealed_total", "sfubot_seal_failures_total",
        "sfubot_decrypt_failures_total", "sfubot_janus_reconnects_total", "sfubot_janus_reclaims_total",
        "sfubot_rejoins_total", "sfubot_ice_restarts_total", "sfubot_gaps_total", "sfubot_gap_seconds_total",
        "sfubot_bytes_written_total", "sfubot_jobs",
        "sfubot_load_bots", "sfubot_load_join_retries_total", "sfubot_load_bitrate_mbps", "sfubot_load_rtp_packets_total",
        "sfubot_load_loss_percent", "sfubot_load_frames_decrypted_total", "sfubot_load_decrypt_failures_total",
        "sfubot_load_connection_drops_total", "sfubot_load_claims_total", "sfubot_load_rejoins_total",
        "sfubot_load_media_restarts_total", "sfubot_load_gap_seconds_total", "sfubot_load_chaos_faults_total",
        "sfubot_load_chaos_not_recovered_total", "sfubot_load_cpu_cores", "sfubot_load_resident_bytes", "sfubot_load_threads",
        "sfubot_cluster_failovers_total", "sfubot_cluster_jobs_fenced_total", "sfubot_cluster_lease_renewals_missed_total",
        "sfubot_upload_queue_depth", "sfubot_uploads_total", "sfubot_upload_failures_total", "sfubot_upload_bytes_total", "sfubot_upload_takeovers_total",
        "sfubot_webhook_outbox_depth", "sfubot_webhook_attempts_total", "sfubot_webhook_failures_total",
        "sfubot_webhooks_delivered_total", "sfubot_webhooks_expired_total",
        "sfubot_relay_frames_total", "sfubot_relay_bytes_total", "sfubot_relay_destination_failures_total",
        "sfubot_relay_output_delay_seconds_bucket",
    ]

    @Test("deploy/grafana/sfubot.json: valid JSON, schemaVersion 39, ${DS_PROMETHEUS}, unique panel ids, only known metrics, the views the issue asks for")
    func grafanaDashboard() throws {
        let data = try Data(contentsOf: Self.root.appendingPathComponent("deploy/grafana/sfubot.json"))
        let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(dashboard["schemaVersion"] as? Int == 39)
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        let ids = panels.compactMap { $0["id"] as? Int }
        #expect(ids.count == panels.count, "every panel has an id")
        #expect(Set(ids).count == ids.count, "panel ids repeat: \(ids)")

        var used = Set<String>()
        let name = try Regex("sfubot_\\w+")
        for panel in panels where panel["type"] as? String != "row" {
            let title = panel["title"] as? String ?? "?"
            let uid = (panel["datasource"] as? [String: Any])?["uid"] as? String
            #expect(uid == "${DS_PROMETHEUS}", "panel \(title): datasource \(uid ?? "none")")
            let targets = panel["targets"] as? [[String: Any]] ?? []
            #expect(!targets.isEmpty, "panel \(title) has no query")
            for target in targets {
                let expr = target["expr"] as? String ?? ""
                let names = expr.matches(of: name).map { String(expr[$0.range]) }
                #expect(!names.isEmpty, "panel \(title): \(expr) queries no sfubot metric")
                for n in names {
                    #expect(Self.knownMetrics.contains(n), "panel \(title): unknown metric \(n)")
                    used.insert(n)
                }
            }
        }
        // The views the issue names: jobs, frames, decrypt failures, reconnects/rejoins/ICE
        // restarts, gaps, bytes written, and load's bots, bitrate and loss.
        let wanted: Set<String> = ["sfubot_jobs", "sfubot_frames_opened_total", "sfubot_frames_sealed_total",
                                   "sfubot_decrypt_failures_total", "sfubot_janus_reconnects_total", "sfubot_rejoins_total",
                                   "sfubot_ice_restarts_total", "sfubot_gap_seconds_total", "sfubot_bytes_written_total",
                                   "sfubot_load_bots", "sfubot_load_bitrate_mbps", "sfubot_load_loss_percent",
                                   // Issue 27: owners, failovers, the upload queue and webhook delivery.
                                   "sfubot_cluster_failovers_total", "sfubot_upload_queue_depth", "sfubot_webhook_outbox_depth",
                                   "sfubot_webhook_failures_total",
                                   // Issue 43: relays' frames, bitrate and destination failures.
                                   "sfubot_relay_frames_total", "sfubot_relay_bytes_total", "sfubot_relay_destination_failures_total",
                                   "sfubot_relay_output_delay_seconds_bucket"]
        #expect(wanted.subtracting(used).isEmpty, "no panel shows \(wanted.subtracting(used).sorted())")
    }
}
