public import Foundation

/// Real speech for audio tests, made offline: espeak-ng (Debian) says a text, GStreamer makes
/// it 48 kHz mono (Tests/Chromium/envelope.py, the same speech the Chromium suite uses).
public enum Speech {
    public static let otherText = "Please leave a message after the tone. Our office hours are nine to five, Monday to Friday. Thank you for calling."
    public static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Chromium/envelope.py")

    /// Writes the suite's speech (or `text`) to `url` as a WAV.
    public static func make(_ url: URL, text: String? = nil) async throws -> URL {
        let r = try await ChildProcess.run("/usr/bin/python3", [script.path, "make", url.path] + (text.map { [$0] } ?? []))
        guard r.status == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path, NSLocalizedDescriptionKey: r.errText]) }
        return url
    }

    /// The 16-bit mono samples of a WAV made by `make` (44-byte header).
    public static func samples(_ wav: URL) throws -> [Int16] {
        let data = try Data(contentsOf: wav).dropFirst(44)
        return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// The best normalised correlation of the 20 ms RMS envelopes (48 kHz) of `source` and
    /// `recording`, over shifts of up to ±3 s, on the part both cover.
    public static func envelopeCorrelation(_ source: [Int16], _ recording: [Int16]) -> Double {
        func envelope(_ x: [Int16]) -> [Double] {
            stride(from: 0, to: x.count - 959, by: 960).map { i in
                (x[i..<(i + 960)].reduce(0.0) { $0 + Double($1) * Double($1) } / 960).squareRoot()
            }
        }
        let a = envelope(source), b = envelope(recording)
        var best = 0.0
        for lag in -150...150 {
            let pairs = b.indices.compactMap { j -> (Double, Double)? in
                let i = j + lag
                return a.indices.contains(i) ? (a[i], b[j]) : nil
            }
            guard pairs.count >= 200 else { continue }
            let ma = pairs.reduce(0) { $0 + $1.0 } / Double(pairs.count), mb = pairs.reduce(0) { $0 + $1.1 } / Double(pairs.count)
            var sab = 0.0, saa = 0.0, sbb = 0.0
            for (x, y) in pairs { sab += (x - ma) * (y - mb); saa += (x - ma) * (x - ma); sbb += (y - mb) * (y - mb) }
            if saa > 0, sbb > 0 { best = max(best, sab / (saa * sbb).squareRoot()) }
        }
        return best
    }
}
