/// An estimated MOS from network figures: the ITU-T G.107 E-model with its defaults for what a
/// bot cannot measure (room noise, echo, advantage factor), as load-test reports use it.
public struct EModel: Sendable {
    /// Equipment impairment of the codec without loss (Ie) and its packet-loss robustness (Bpl).
    /// G.113 publishes no Opus values; 0 and 20 are this project's assumption (a modern codec
    /// with concealment), stated in every report.
    public var codecImpairment = 0.0
    public var lossRobustness = 20.0
    /// Loss that comes in bursts weighs more (BurstR; 1 = random loss).
    public var burstRatio = 1.0
    /// Delay added beyond the network's one-way delay: encoder frame and look-ahead (Opus 20 ms
    /// + 6.5 ms) and the receiver's jitter buffer.
    public var codecDelayMilliseconds = 26.5

    public init() {}

    /// The rating factor R: 93.2 − Id (delay) − Ie,eff (codec and loss).
    /// - Parameters: one-way delay (often RTT/2) and jitter in ms; loss in percent.
    public func rating(oneWayDelayMs: Double, jitterMs: Double, lossPercent: Double) -> Double {
        // Effective delay: network + jitter buffer (two jitters) + codec.
        let d = max(0, oneWayDelayMs) + 2 * max(0, jitterMs) + codecDelayMilliseconds
        let delayImpairment = 0.024 * d + (d > 177.3 ? 0.11 * (d - 177.3) : 0)
        let ppl = min(100, max(0, lossPercent))
        let lossImpairment = codecImpairment + (95 - codecImpairment) * ppl / (ppl / burstRatio + lossRobustness)
        return 93.2 - delayImpairment - lossImpairment
    }

    /// G.107's mapping of R to the mean opinion score (1 to 4.5).
    public static func mos(rating r: Double) -> Double {
        if r <= 0 { return 1 }
        if r >= 100 { return 4.5 }
        return 1 + 0.035 * r + r * (r - 60) * (100 - r) * 7e-6
    }

    public func mos(oneWayDelayMs: Double, jitterMs: Double, lossPercent: Double) -> Double {
        Self.mos(rating: rating(oneWayDelayMs: oneWayDelayMs, jitterMs: jitterMs, lossPercent: lossPercent))
    }
}
