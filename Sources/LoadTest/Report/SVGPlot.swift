import Foundation

/// A small SVG chart: line series (time series, CDFs) or bars (histograms), with axes, ticks
/// and a legend. Self-contained text, so the report needs no script or network.
struct SVGPlot {
    struct Series {
        var label: String
        var points: [(x: Double, y: Double)]
        var color: String
    }

    var name: String
    var title: String
    var xLabel: String
    var yLabel: String
    var series: [Series] = []
    /// Bars instead of lines (one series: bin start → count; width = `barWidth`).
    var barWidth: Double?
    var yMin: Double? = 0
    var yMax: Double?

    static let width = 640.0, height = 320.0
    static let palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    private let left = 64.0, right = 16.0, top = 36.0, bottom = 48.0

    var svg: String {
        let w = Self.width, h = Self.height
        let all = series.flatMap(\.points)
        var out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(w))\" height=\"\(Int(h))\" viewBox=\"0 0 \(Int(w)) \(Int(h))\" font-family=\"DejaVu Sans, sans-serif\" font-size=\"11\">"
        out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>"
        out += "<text x=\"\(w / 2)\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">\(esc(title))</text>"
        guard !all.isEmpty else {
            out += "<text x=\"\(w / 2)\" y=\"\(h / 2)\" text-anchor=\"middle\" fill=\"#888\">no data</text></svg>"
            return out
        }
        var x0 = all.map(\.x).min()!, x1 = all.map(\.x).max()! + (barWidth ?? 0)
        if x1 <= x0 { x1 = x0 + 1 }
        var y0 = yMin ?? all.map(\.y).min()!, y1 = yMax ?? all.map(\.y).max()!
        if y1 <= y0 { y1 = y0 + 1 }
        let xt = ticks(x0, x1), yt = ticks(y0, y1)
        x0 = min(x0, xt.first!); x1 = max(x1, xt.last!)
        y0 = min(y0, yt.first!); y1 = max(y1, yt.last!)
        let pw = w - left - right, ph = h - top - bottom
        func px(_ x: Double) -> Double { left + (x - x0) / (x1 - x0) * pw }
        func py(_ y: Double) -> Double { top + ph - (y - y0) / (y1 - y0) * ph }
        for t in yt {
            out += "<line x1=\"\(left)\" x2=\"\(left + pw)\" y1=\"\(f(py(t)))\" y2=\"\(f(py(t)))\" stroke=\"#e5e5e5\"/>"
            out += "<text x=\"\(left - 6)\" y=\"\(f(py(t) + 4))\" text-anchor=\"end\">\(label(t))</text>"
        }
        for t in xt {
            out += "<line x1=\"\(f(px(t)))\" x2=\"\(f(px(t)))\" y1=\"\(top + ph)\" y2=\"\(top + ph + 4)\" stroke=\"#333\"/>"
            out += "<text x=\"\(f(px(t)))\" y=\"\(top + ph + 16)\" text-anchor=\"middle\">\(label(t))</text>"
        }
        out += "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(pw)\" height=\"\(ph)\" fill=\"none\" stroke=\"#333\"/>"
        out += "<text x=\"\(left + pw / 2)\" y=\"\(h - 8)\" text-anchor=\"middle\">\(esc(xLabel))</text>"
        out += "<text transform=\"translate(14 \(top + ph / 2)) rotate(-90)\" text-anchor=\"middle\">\(esc(yLabel))</text>"
        for s in series {
            if let bw = barWidth {
                for p in s.points {
                    let x = px(p.x), x2 = px(p.x + bw), y = py(p.y)
                    out += "<rect x=\"\(f(x + 1))\" y=\"\(f(y))\" width=\"\(f(max(1, x2 - x - 2)))\" height=\"\(f(top + ph - y))\" fill=\"\(s.color)\"/>"
                }
            } else {
                let d = s.points.map { "\(f(px($0.x))),\(f(py($0.y)))" }.joined(separator: " ")
                out += "<polyline fill=\"none\" stroke=\"\(s.color)\" stroke-width=\"2\" points=\"\(d)\"/>"
            }
        }
        if series.count > 1 {
            for (i, s) in series.enumerated() {
                let y = top + 10 + Double(i) * 14
                out += "<rect x=\"\(left + 8)\" y=\"\(y - 8)\" width=\"10\" height=\"10\" fill=\"\(s.color)\"/>"
                out += "<text x=\"\(left + 22)\" y=\"\(y + 1)\">\(esc(s.label))</text>"
            }
        }
        return out + "</svg>"
    }

    /// About five round ticks covering [a, b].
    private func ticks(_ a: Double, _ b: Double) -> [Double] {
        let raw = (b - a) / 5
        let mag = pow(10, floor(log10(raw)))
        let step = [1.0, 2, 2.5, 5, 10].map { $0 * mag }.first { $0 >= raw } ?? 10 * mag
        let start = floor(a / step) * step
        return stride(from: start, through: ceil(b / step) * step + step / 2, by: step).map { $0 }
    }

    private func label(_ v: Double) -> String {
        if v == v.rounded(), abs(v) < 1e7 { return String(Int(v)) }
        return String(format: abs(v) < 1 ? "%.2f" : "%.1f", v)
    }

    private func f(_ v: Double) -> String { String(format: "%.1f", v) }
    private func esc(_ s: String) -> String { s.markupEscaped }
}

extension String {
    /// Safe as text in HTML or SVG.
    var markupEscaped: String {
        replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
