import Foundation

extension KeyLog {
    /// The keys of a key log, in the order they came into use: which key opens a frame of time `t`.
    public struct Entries: Sendable {
        /// Distinct keys in the order they came into use (a key logged again, e.g. the same
        /// key after a rejoin, keeps its first time).
        public let keys: [(from: Double, index: Int?, key: CallKey)]

        /// Reads a key log; `call` keeps only that call's keys, `participant` only that sender's
        /// (nil: the call key, i.e. entries without a participant).
        public init(path: String, call: Int64? = nil, participant: String? = nil) throws(KeyLogError) {
            guard let data = FileManager.default.contents(atPath: path) else { throw KeyLogError(.unreadable(path)) }
            var entries = [Entry]()
            let decoder = JSONDecoder()
            for (n, line) in data.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() where !line.isEmpty {
                guard let e = try? decoder.decode(Entry.self, from: Data(line)) else { throw KeyLogError(.badLine(path, n + 1)) }
                entries.append(e)
            }
            try self.init(entries.filter { $0.format == nil && (call == nil || $0.call == call) && $0.participant == participant }, path: path)
        }

        /// Entries already parsed (tests, or a caller that filtered them itself).
        public init(_ entries: [Entry], path: String = "key log") throws(KeyLogError) {
            var seen = Set<String>()
            var keys = [(from: Double, index: Int?, key: CallKey)]()
            // Stable sort by time: two keys logged at the same time keep the file's order.
            for (n, e) in entries.enumerated().sorted(by: { ($0.element.from, $0.offset) < ($1.element.from, $1.offset) }) {
                guard seen.insert(e.key.lowercased()).inserted else { continue }
                guard let key = try? CallKey(hex: e.key) else { throw KeyLogError(.badLine(path, n + 1)) }
                keys.append((e.from, e.index, key))
            }
            self.keys = keys
        }

        /// The position of the key in use at `t`: the last one whose time has come (the first
        /// one for a frame older than every entry).
        public func position(at t: Double) -> Int? {
            guard !keys.isEmpty else { return nil }
            var lo = 0, hi = keys.count  // first index with from > t
            while lo < hi {
                let mid = (lo + hi) / 2
                if keys[mid].from <= t { lo = mid + 1 } else { hi = mid }
            }
            return max(0, lo - 1)
        }

        /// The keys to try on a frame received at `t`, as a key ring would hold them then: the
        /// key in use, the one before it (a sender late to switch), the one after it (a sender
        /// early, or clocks apart).
        public func candidates(at t: Double) -> KeyRing.Candidates {
            guard let i = position(at: t) else { return .none }
            return KeyRing.Candidates(
                current: keys[i].key,
                backup: i > 0 ? keys[i - 1].key : nil,
                future: i + 1 < keys.count ? keys[i + 1].key : nil)
        }

        /// Every key, nearest to `t` first: the key in use, then its neighbours outwards (before
        /// after each step). For a frame none of `candidates(at:)` opens.
        public func keys(near t: Double) -> [CallKey] {
            guard let i = position(at: t) else { return [] }
            var out = [keys[i].key]
            for step in 1..<max(1, keys.count) {
                if i - step >= 0 { out.append(keys[i - step].key) }
                if i + step < keys.count { out.append(keys[i + step].key) }
            }
            return out
        }
    }

    /// The key material a log holds for `format` (`--key-log` of a FrameCryptor or SFrame
    /// call), by participant (nil: shared) and index: the first material each had, since a
    /// receiver follows a ratchet forward from it but never back.
    public static func material(path: String, format: FrameFormatName) throws(KeyLogError) -> (shared: [UInt64: KeyMaterial], own: [String: [UInt64: KeyMaterial]]) {
        guard let data = FileManager.default.contents(atPath: path) else { throw KeyLogError(.unreadable(path)) }
        var shared = [UInt64: KeyMaterial](), own = [String: [UInt64: KeyMaterial]]()
        let decoder = JSONDecoder()
        for (n, line) in data.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() where !line.isEmpty {
            guard let e = try? decoder.decode(Entry.self, from: Data(line)) else { throw KeyLogError(.badLine(path, n + 1)) }
            guard e.format == format.rawValue else { continue }
            guard let index = e.index.flatMap(UInt64.init(exactly:)), let material = try? KeyMaterial(hex: e.key) else {
                throw KeyLogError(.badLine(path, n + 1))
            }
            if let p = e.participant {
                if own[p]?[index] == nil { own[p, default: [:]][index] = material }
            } else if shared[index] == nil {
                shared[index] = material
            }
        }
        return (shared, own)
    }
}
