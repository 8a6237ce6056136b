import Foundation

/// `report.html`: the verdict first, then the figures and the plots, in one file.
enum ReportPage {
    static func html(summary s: LoadSummary, plots: ReportPlots) -> String {
        func f(_ v: Double?, _ digits: Int = 2) -> String { v.map { String(format: "%.\(digits)f", $0) } ?? "–" }
        func dist(_ d: LoadSummary.Distribution?, _ digits: Int = 2) -> String {
            d.map { "p50 \(f($0.p50, digits)) · p95 \(f($0.p95, digits)) · max \(f($0.max, digits)) (n=\($0.n))" } ?? "–"
        }
        func esc(_ t: String) -> String { t.markupEscaped }
        var rows: [(String, String)] = [
            ("Room", "\(s.room) on \(esc(s.janus))"),
            ("E2EE", s.e2ee ? "on (AES-256-GCM per frame)" : "off"),
            ("Bots", "\(s.bots.joined) joined of \(s.bots.plannedPublishers) publishers + \(s.bots.plannedSubscribers) subscribers; \(s.bots.failed) failed, \(s.bots.lost) lost, \(s.bots.retries) retries; \(s.shards) shard(s)"),
            ("Join → first decrypted frame (s)", dist(s.joinSeconds["first_decrypted"])),
            ("Join → joined (s)", dist(s.joinSeconds["joined"])),
        ] + ["publisher", "subscriber"].compactMap { role in
            guard let phases = s.joinPhases[role] else { return nil }
            let steps = JoinPhases.names.compactMap { name in
                phases[name]?.took.map { "\(name) \(f($0.p50 * 1000, 0))/\(f($0.p95 * 1000, 0))/\(f($0.p99 * 1000, 0))" }
            }
            return ("Join phases, \(role)s: ms each took, p50/p95/p99", steps.joined(separator: " · "))
        } + [
            ("Subscribers receiving every feed", "\(s.subscribers.receivingEveryFeed) of \(s.bots.plannedSubscribers)"),
            ("Frames decrypted / failed", "\(s.subscribers.framesOpened) / \(s.subscribers.decryptFailuresTotal) \(s.subscribers.decryptFailures.map { "\($0.key): \($0.value)" }.sorted().joined(separator: ", "))"),
            ("Loss at subscribers", s.subscribers.lossPercent.map { f($0, 3) + " %" } ?? "–"),
            ("Jitter (ms)", dist(s.subscribers.jitterMs)),
            ("RTT publisher ↔ Janus (ms)", dist(s.publishers.rttMs)),
            ("MOS (E-model)", s.subscribers.mos.map { "p5 \(f($0.p5)) · p50 \(f($0.p50)) · min \(f($0.min))" } ?? "–"),
        ]
        if let st = s.steady {
            rows.append(("Steady window", "\(f(st.seconds, 1)) s; out \(f(st.mbpsOut)) Mbit/s, in \(f(st.mbpsIn)) Mbit/s; received/sent per feed \(dist(st.receivedOverSent, 3))"))
        }
        if let ice = s.ice { rows.append(("ICE paths", esc(ice.line.replacingOccurrences(of: "ICE: ", with: "")))) }
        let c = s.comebacks
        rows.append(("Comebacks", "\(c.connectionDrops) WebSocket drops, \(c.claims) claimed; \(c.rejoins) rejoins, \(c.mediaRestarts) media restarts; gap \(f(c.gapSeconds)) s in all; loss → media \(dist(c.seconds))"
                     + (c.notBack.isEmpty ? "" : "; not back: " + c.notBack.sorted { $0.key < $1.key }.map { esc("\($0.key): \($0.value)") }.joined(separator: ", "))))
        for (kind, k) in (s.chaos ?? [:]).sorted(by: { $0.key < $1.key }) {
            let d = k.seconds.map { "min \(f($0.min, 3)) · p50 \(f($0.p50, 3)) · p95 \(f($0.p95, 3)) · max \(f($0.max, 3))" } ?? "–"
            rows.append(("Chaos \(esc(kind)) (\(f(k.rate)) /min\(kind == "key-rotation" ? "" : " per bot"))",
                         "\(k.count) faults, \(k.recovered) recovered; fault → first decrypted frame (s): \(d)"
                         + (k.notRecovered.isEmpty ? "" : "; not recovered: " + esc(k.notRecovered.joined(separator: "; ")))))
        }
        for p in s.process {
            rows.append(("Process (shard \(p.shard), \(esc(p.host)))",
                         "\(p.bots) bots: CPU \(f(p.cpuCores)) cores, \(f(p.cpuMicrosecondsPerPacket, 1)) µs/packet (\(f(p.kernelMicrosecondsPerPacket, 1)) in the kernel); RSS peak \(f(p.peakRSSMB, 0)) MB, \(f(p.rssPerBotMB)) MB/bot; \(f(p.threadsPerBot, 1)) threads/bot"))
        }
        let verdict = s.held
            ? "<div class=\"v ok\">The room held.</div>"
            : "<div class=\"v bad\">The room did not hold:<ul>" + s.problems.map { "<li>\(esc($0))</li>" }.joined() + "</ul></div>"
        return """
            <!doctype html>
            <html><head><meta charset="utf-8"><title>sfubot load: room \(s.room)</title>
            <style>
            body{font-family:DejaVu Sans,Helvetica,sans-serif;max-width:1320px;margin:24px auto;color:#222}
            .v{padding:12px 16px;border-radius:6px;font-size:18px;margin:12px 0}
            .ok{background:#e3f5e1;border:1px solid #7bc47f}.bad{background:#fde2e1;border:1px solid #e57373}
            table{border-collapse:collapse;margin:12px 0}td{padding:4px 10px;border-bottom:1px solid #eee;vertical-align:top}
            td:first-child{color:#555;white-space:nowrap}.plots{display:flex;flex-wrap:wrap;gap:12px}
            small{color:#777}
            </style></head><body>
            <h1>sfubot load: room \(s.room)</h1>
            <small>\(ISO8601DateFormatter().string(from: s.started)) → \(ISO8601DateFormatter().string(from: s.ended))\(s.interrupted ? " (interrupted)" : "")</small>
            \(verdict)
            <table>\(rows.map { "<tr><td>\($0.0)</td><td>\($0.1)</td></tr>" }.joined())</table>
            <div class="plots">\(plots.all.map(\.svg).joined(separator: "\n"))</div>
            <p><small>\(esc(s.mosModel)). Per-bot figures: bots.csv; all figures: summary.json, raw.json.</small></p>
            </body></html>
            """
    }
}
