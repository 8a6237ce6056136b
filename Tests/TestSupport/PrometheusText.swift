import Telemetry

/// Reads Prometheus text exposition the way a scraper does: the value of one series.
public enum PrometheusText {
    /// The value on the line `series value` (series: the name with its labels as rendered,
    /// e.g. `sfubot_frames_opened_total{kind="audio"}`); nil if no such line.
    public static func value(_ series: String, in text: String) -> Double? {
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            if parts.count == 2, parts[0] == series { return Double(parts[1]) }
        }
        return nil
    }

    /// A series of this test process's own registry (bootstrapped on first use); 0 before it
    /// exists. Tests in parallel may add to it: compare before and after with "at least".
    public static func processValue(_ series: String) -> Double {
        value(series, in: Telemetry.render(Telemetry.bootstrap())) ?? 0
    }
}
