import Foundation

/// One chain across the folders of every owner of a recording (serve's failover, docs/proof.md):
/// from the first checkpoint, each next one is the line naming its hash. Where an owner's lease
/// ran out, the next owner's takeover line links to the last checkpoint the dead one published;
/// what the dead one wrote after that (a tail) stays in its own folder and proves that folder's
/// files, but is not on the chain.
enum ChainStitch {
    struct Node {
        let folder: Int
        let line: ChainCheck.Line
        var hash: String { line.hash }
        var number: Int { line.checkpoint?.number ?? 0 }
        var time: String? { line.checkpoint?.time }
    }

    /// The chain's end (folder index and line), or nil if no folder holds a valid checkpoint.
    static func run(_ folders: [(label: String, outcome: ChainCheck.Outcome)], into r: inout VerifyReport) -> Node? {
        var all: [String: Node] = [:]
        var next: [String: [String: Node]] = [:]
        var firsts: [String: Node] = [:]
        for (f, folder) in folders.enumerated() {
            for line in folder.outcome.lines where line.valid {
                // The same line in two folders (a copy given twice) is one checkpoint.
                let node = Node(folder: f, line: line)
                all[line.hash] = all[line.hash] ?? node
                if let p = line.previous { next[p, default: [:]][line.hash] = node } else { firsts[line.hash] = node }
            }
        }
        guard !all.isEmpty else { return nil }
        func at(_ n: Node) -> String { folders.count > 1 ? "checkpoint \(n.number) (\(folders[n.folder].label))" : "checkpoint \(n.number)" }
        let starts = firsts.values.sorted { ($0.time ?? "") < ($1.time ?? "") }
        guard var node = starts.first else {
            let earliest = all.values.min { $0.number < $1.number }!
            r.problem("the chain starts at \(at(earliest)), which links to a checkpoint no folder given holds: give the folder of every owner of the recording (the one before took it up to checkpoint \(earliest.number - 1))", checkpoint: earliest.number)
            return all.values.max { $0.number < $1.number }
        }
        if starts.count > 1 { r.problem("\(starts.count) chains start in these folders (\(starts.map(at).joined(separator: ", "))): they are not one recording's") }
        if let t = node.line.takeover {
            r.failovers.append("\(at(node)) took over (\(t["cause"]?.string ?? "?")) from \(t["from"]?.string ?? "an earlier owner"), which had published no checkpoint: the chain starts here")
        }
        var onChain: Set<String> = [node.hash], tails: Set<String> = []
        while let following = next[node.hash]?.values, !following.isEmpty {
            let takeovers = following.filter { $0.line.takeover != nil }.sorted { ($0.time ?? "") < ($1.time ?? "") }
            let plain = following.filter { $0.line.takeover == nil }
            if plain.count > 1 { r.problem("\(plain.count) checkpoints follow \(at(node)): the chain forks (\(plain.map(at).joined(separator: ", ")))", checkpoint: node.number) }
            if takeovers.count > 1 { r.problem("\(takeovers.count) owners took the recording over after \(at(node)) (\(takeovers.map(at).joined(separator: ", ")))", checkpoint: node.number) }
            let chosen = takeovers.first ?? plain[0]
            if chosen.number != node.number + 1 { r.problem("\(at(chosen)) follows \(at(node)): numbered wrong", checkpoint: chosen.number) }
            if let t = chosen.line.takeover {
                var text = "\(at(chosen)) took over (\(t["cause"]?.string ?? "?")) from \(t["from"]?.string ?? "an earlier owner") after \(at(node)) of \(node.time ?? "?"), "
                text += "its first checkpoint at \(chosen.time ?? "?")"
                if let gap = seconds(from: node.time, to: chosen.time) { text += ": \(String(format: "%.1f", gap)) s between them" }
                // What the dead owner wrote after the checkpoint it published.
                if var last = plain.first {
                    tails.insert(last.hash)
                    while let more = next[last.hash]?.values.first(where: { $0.line.takeover == nil }) {
                        last = more
                        tails.insert(more.hash)
                    }
                    text += "; \(folders[last.folder].label) goes on to checkpoint \(last.number) of \(last.time ?? "?"), not published: it proves that folder's files, off the chain"
                }
                r.failovers.append(text)
            }
            onChain.insert(chosen.hash)
            node = chosen
        }
        for n in all.values.sorted(by: { $0.number < $1.number }) where !onChain.contains(n.hash) && !tails.contains(n.hash) {
            r.problem("\(at(n)) is on no chain from the first checkpoint: a checkpoint was removed or inserted, or a folder is another recording's", checkpoint: n.number)
        }
        return node
    }

    static func seconds(from: String?, to: String?) -> Double? {
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        guard let from, let to, let a = try? style.parse(from), let b = try? style.parse(to) else { return nil }
        return b.timeIntervalSince(a)
    }
}
