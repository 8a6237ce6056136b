public import Foundation

/// Writes a run's report folder: `raw.json` (what `merge` reads), `summary.json`, `bots.csv`,
/// and `report.html` with its plots (also as PNG files).
public enum LoadReport {
    public static func write(_ result: LoadResult, to directory: URL) async throws -> LoadSummary {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let summary = LoadSummary(result)
        try encoder.encode(result).write(to: directory.appendingPathComponent("raw.json"), options: .atomic)
        try encoder.encode(summary).write(to: directory.appendingPathComponent("summary.json"), options: .atomic)
        try csv(result.bots).write(to: directory.appendingPathComponent("bots.csv"), atomically: true, encoding: .utf8)
        let plots = ReportPlots(result: result, summary: summary)
        try ReportPage.html(summary: summary, plots: plots).write(to: directory.appendingPathComponent("report.html"), atomically: true, encoding: .utf8)
        for plot in plots.all {
            try plot.svg.write(to: directory.appendingPathComponent("\(plot.name).svg"), atomically: true, encoding: .utf8)
        }
        try await PlotRaster.png(directory: directory, names: plots.all.map(\.name))
        return summary
    }

    /// Reads the `raw.json` of each shard's folder and joins them into one result.
    public static func merge(_ directories: [URL]) throws -> LoadResult {
        let results = try directories.map { dir -> LoadResult in
            let url = dir.appendingPathComponent("raw.json")
            do { return try decoder.decode(LoadResult.self, from: Data(contentsOf: url)) } catch {
                throw MergeError("\(url.path): \(error.localizedDescription) (is it a `sfubot load --report` folder?)")
            }
        }
        guard var merged = results.first else { throw MergeError("nothing to merge") }
        for r in results.dropFirst() {
            guard r.room == merged.room else { throw MergeError("reports of different rooms (\(merged.room), \(r.room))") }
            merged.shards += r.shards
            merged.bots += r.bots
            merged.e2ee = merged.e2ee && r.e2ee
        }
        let shards = Set(merged.shards.map(\.index))
        guard shards.count == merged.shards.count else { throw MergeError("the same shard appears twice: merge each shard's folder once") }
        merged.bots.sort { ($0.role.rawValue, $0.index) < ($1.role.rawValue, $1.index) }
        merged.shards.sort { $0.index < $1.index }
        return merged
    }

    public struct MergeError: Error, CustomStringConvertible {
        public let description: String
        init(_ d: String) { description = d }
    }

    static let columns = [
        "role", "index", "shard", "display", "feed_id", "state", "attempts", "error", "started_at_s",
    ] + JoinPhases.names.map { "\($0)_s" } + [
        "frames_sealed", "seal_failures", "packets_sent", "bytes_sent", "rtt_ms", "remote_loss_pct",
        "feeds", "feeds_receiving", "frames_received", "frames_opened", "video_frames_opened", "decrypt_failures",
        "packets_received", "bytes_received", "packets_lost", "loss_pct", "jitter_ms", "mos", "mos_worst",
        "connection_drops", "claims", "rejoins", "media_restarts", "gap_s", "candidate_pair", "packets_through_agent",
    ]

    static func csv(_ bots: [BotRecord]) -> String {
        func f(_ d: Double?) -> String { d.map { String(format: "%.4f", $0) } ?? "" }
        func q(_ s: String?) -> String {
            guard let s else { return "" }
            return s.contains(where: { $0 == "," || $0 == "\"" || $0.isNewline }) ? "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : s
        }
        var lines = [columns.joined(separator: ",")]
        for b in bots {
            let row: [String] = [
                b.role.rawValue, "\(b.index)", "\(b.shard)", q(b.display), b.feedID.map(String.init) ?? "", b.state.rawValue, "\(b.attempts)",
                q(b.error), f(b.startedAt),
            ] + b.phases.values.map(f) + [
                "\(b.framesSealed)", "\(b.sealFailures)", "\(b.packetsSent)", "\(b.bytesSent)", f(b.rttMs), f(b.remoteLossPercent),
                "\(b.feeds)", "\(b.feedsReceiving)", "\(b.framesReceived)", "\(b.framesOpened)", "\(b.videoFramesOpened)", "\(b.decryptFailuresTotal)",
                "\(b.packetsReceived)", "\(b.bytesReceived)", "\(b.packetsLost)", f(b.lossPercent), f(b.jitterMs), f(b.mos), f(b.mosWorst),
                "\(b.comeback?.connectionDrops ?? 0)", "\(b.comeback?.claims ?? 0)", "\(b.comeback?.rejoins ?? 0)",
                "\(b.comeback?.mediaRestarts ?? 0)", f(b.comeback?.gapSeconds ?? 0), q(b.candidatePair), b.packetsThroughAgent.map(String.init) ?? "",
            ]
            lines.append(row.joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static var encoder: JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys]
        e.dateEncodingStrategy = .iso8601
        e.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return e
    }

    static var decoder: JSONDecoder {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .iso8601
        d.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return d
    }
}
