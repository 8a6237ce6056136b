import Foundation

/// The report's charts, from a (possibly merged) result.
struct ReportPlots {
    var joinCDF: SVGPlot
    var bitrate: SVGPlot
    var loss: SVGPlot
    var jitter: SVGPlot
    var mos: SVGPlot
    var cpu: SVGPlot
    var memory: SVGPlot

    var all: [SVGPlot] { [joinCDF, bitrate, loss, jitter, mos, cpu, memory] }

    init(result: LoadResult, summary: LoadSummary) {
        let c = SVGPlot.palette
        var cdf = SVGPlot(name: "join-time-cdf", title: "Join time (CDF over bots)", xLabel: "seconds from attempt start", yLabel: "fraction of bots")
        cdf.yMax = 1
        for (i, name) in JoinPhases.names.enumerated() {
            let v = result.bots.compactMap { $0.phases.values[i] }.sorted()
            guard !v.isEmpty else { continue }
            cdf.series.append(.init(label: name.replacingOccurrences(of: "_", with: " "),
                                    points: v.enumerated().map { ($1, Double($0 + 1) / Double(v.count)) }, color: c[i % c.count]))
        }
        joinCDF = cdf

        let timeline = Self.merged(result)
        bitrate = SVGPlot(name: "bitrate", title: "Bitrate", xLabel: "seconds", yLabel: "Mbit/s", series: [
            .init(label: "out (publishers)", points: timeline.map { ($0.t, $0.mbpsOut) }, color: c[0]),
            .init(label: "in (subscribers)", points: timeline.map { ($0.t, $0.mbpsIn) }, color: c[1]),
        ])
        loss = SVGPlot(name: "loss", title: "Packet loss at subscribers", xLabel: "seconds", yLabel: "% of packets", series: [
            .init(label: "loss", points: timeline.compactMap { t in t.lossPercent.map { (t.t, $0) } }, color: c[1]),
        ])
        jitter = Self.histogram(name: "jitter", title: "Jitter (subscribers, mean over their streams)", xLabel: "ms",
                                values: result.bots.compactMap(\.jitterMs), bin: nil, color: c[3])
        mos = Self.histogram(name: "mos", title: "Estimated MOS (E-model, per subscriber)", xLabel: "MOS",
                             values: result.bots.compactMap(\.mos), bin: 0.1, color: c[2])
        cpu = SVGPlot(name: "cpu", title: "sfubot CPU", xLabel: "seconds", yLabel: "cores", series: [
            .init(label: "cores", points: timeline.map { ($0.t, $0.cpuCores) }, color: c[0]),
        ])
        memory = SVGPlot(name: "memory", title: "sfubot resident memory", xLabel: "seconds", yLabel: "MB", series: [
            .init(label: "RSS", points: timeline.map { ($0.t, $0.rssMB) }, color: c[4]),
        ])
    }

    /// Shards' timelines summed per whole second since each shard's start.
    static func merged(_ r: LoadResult) -> [TimelineSample] {
        guard r.shards.count > 1 else { return r.shards.first?.timeline ?? [] }
        var buckets: [Int: [TimelineSample]] = [:]
        for s in r.shards { for t in s.timeline { buckets[Int(t.t), default: []].append(t) } }
        return buckets.keys.sorted().map { k in
            let list = buckets[k]!
            let losses = list.compactMap(\.lossPercent)
            return TimelineSample(
                t: Double(k), publishersJoined: list.reduce(0) { $0 + $1.publishersJoined }, subscribersJoined: list.reduce(0) { $0 + $1.subscribersJoined },
                failed: list.reduce(0) { $0 + $1.failed }, mbpsOut: list.reduce(0) { $0 + $1.mbpsOut }, mbpsIn: list.reduce(0) { $0 + $1.mbpsIn },
                lossPercent: losses.isEmpty ? nil : losses.reduce(0, +) / Double(losses.count),
                decryptFailures: list.reduce(0) { $0 + $1.decryptFailures }, framesOpened: list.reduce(0) { $0 + $1.framesOpened },
                cpuCores: list.reduce(0) { $0 + $1.cpuCores }, rssMB: list.reduce(0) { $0 + $1.rssMB }, threads: list.reduce(0) { $0 + $1.threads })
        }
    }

    static func histogram(name: String, title: String, xLabel: String, values: [Double], bin: Double?, color: String) -> SVGPlot {
        var plot = SVGPlot(name: name, title: title, xLabel: xLabel, yLabel: "bots")
        guard let lo = values.min(), let hi = values.max() else { return plot }
        let width = bin ?? max((hi - lo) / 20, 0.01)
        var counts: [Int: Int] = [:]
        for v in values { counts[Int(floor(v / width)), default: 0] += 1 }
        plot.barWidth = width
        plot.series = [.init(label: name, points: counts.keys.sorted().map { (Double($0) * width, Double(counts[$0]!)) }, color: color)]
        return plot
    }
}
