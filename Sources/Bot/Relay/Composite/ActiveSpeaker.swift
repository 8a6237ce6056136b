import Foundation

/// Who the active speaker is (`--layout speaker`): the loudest participant, by their decoded
/// audio, with hysteresis so the picture does not flap between two people talking over each
/// other: someone else takes over only once they have been louder than the speaker (by
/// `margin`) for `hold` without a break. A state machine with no I/O; the time is given.
///
/// Levels are smoothed (an average of the power over about 200 ms), so a word's gaps do not
/// count as silence; a participant nothing was heard from for `stale` is silent.
struct ActiveSpeaker: Sendable {
    /// How long a challenger must stay louder, how much louder, and the level below which a
    /// participant is not speaking (dBFS).
    var hold: Duration = .seconds(1)
    var margin = 3.0
    var floor = -50.0
    var stale: Duration = .milliseconds(400)

    private struct Heard {
        var power: Double
        var at: ContinuousClock.Instant
    }

    private var levels: [Int: Heard] = [:]
    private(set) var current: Int?
    private var challenger: (slot: Int, since: ContinuousClock.Instant)?

    /// One frame's level (its mean power, 0…1 of full scale squared) from `slot`; true if it
    /// made a new speaker (`current`).
    mutating func heard(_ slot: Int, power: Double, at now: ContinuousClock.Instant) -> Bool {
        // About 200 ms: 0.1 of each new 20 ms frame.
        let before = levels[slot].map { now - $0.at < stale ? $0.power : 0 } ?? power
        levels[slot] = Heard(power: before * 0.9 + power * 0.1, at: now)
        return decide(at: now)
    }

    /// `slot` left: if they were the speaker, the loudest of the others takes over at once (or
    /// nobody). True if `current` changed.
    mutating func removed(_ slot: Int, at now: ContinuousClock.Instant) -> Bool {
        levels[slot] = nil
        if challenger?.slot == slot { challenger = nil }
        guard current == slot else { return false }
        current = levels.keys.filter { level($0, at: now) > floor }.max { level($0, at: now) < level($1, at: now) }
        return true
    }

    /// The smoothed level of `slot` in dBFS (-infinity when silent or stale).
    func level(_ slot: Int, at now: ContinuousClock.Instant) -> Double {
        guard let h = levels[slot], now - h.at < stale, h.power > 0 else { return -.infinity }
        return 10 * log10(h.power)
    }

    private mutating func decide(at now: ContinuousClock.Instant) -> Bool {
        let loudest = levels.keys.max { level($0, at: now) < level($1, at: now) }
        guard let loudest, level(loudest, at: now) > floor else {
            challenger = nil
            return false
        }
        guard let speaker = current else {
            current = loudest
            return true
        }
        guard loudest != speaker, level(loudest, at: now) > level(speaker, at: now) + margin else {
            challenger = nil
            return false
        }
        guard let c = challenger, c.slot == loudest else {
            challenger = (loudest, now)
            return false
        }
        guard now - c.since >= hold else { return false }
        (current, challenger) = (loudest, nil)
        return true
    }
}

extension ActiveSpeaker {
    /// Mean power of interleaved signed 16-bit samples, 0…1.
    static func power(ofS16 bytes: UnsafeRawBufferPointer) -> Double {
        let samples = bytes.count / 2
        guard samples > 0 else { return 0 }
        var sum = 0.0
        for i in 0..<samples {
            let s = Double(bytes.loadUnaligned(fromByteOffset: i * 2, as: Int16.self)) / 32768
            sum += s * s
        }
        return sum / Double(samples)
    }
}
