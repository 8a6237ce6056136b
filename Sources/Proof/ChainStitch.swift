import Foundation

/// One chain across the folders of every owner of a recording (serve's failover, docs/proof.md):
/// from the first checkpoint, each next one is the line naming its hash. Where an owner's lease
/// ran out, the next owner's takeover line links to the last checkpoint the dead one published;
/// what the dead one wrote after that (a tail) stays in its own folder and proves that folder's
/// files, but is not on the chain.
///
/// Each folder's valid lines follow one another; only a file's first line and takeover lines
/// link elsewhere. So the lines are cut into runs at those, and only runs are linked: no
/// per-line graph (memory stays that of the lines themselves).
enum ChainStitch {
    struct Node {
        let folder: Int
        let index: Int
        let line: ChainCheck.Line
        var number: Int { line.number }
        var time: String? { line.time }
    }

    /// A run of lines of one folder: from `start` (a first line or a takeover) to `end`.
    struct Run {
        let folder: Int
        let start: Int
        let end: Int
    }

    /// The chain's end, or nil if no folder holds a valid checkpoint.
    static func run(_ folders: [(label: String, outcome: ChainCheck.Outcome)], into r: inout VerifyReport) -> Node? {
        var runs: [Run] = []
        for (f, folder) in folders.enumerated() {
            let lines = folder.outcome.lines
            var start = 0
            for i in lines.indices.dropFirst() where lines[i].takeover != nil {
                runs.append(Run(folder: f, start: start, end: i))
                start = i
            }
            if !lines.isEmpty { runs.append(Run(folder: f, start: start, end: lines.count)) }
        }
        guard !runs.isEmpty else { return nil }
        func node(_ f: Int, _ i: Int) -> Node { Node(folder: f, index: i, line: folders[f].outcome.lines[i]) }
        func first(_ run: Run) -> Node { node(run.folder, run.start) }
        func at(_ n: Node) -> String { folders.count > 1 ? "checkpoint \(n.number) (\(folders[n.folder].label))" : "checkpoint \(n.number)" }
        // Where each run links to: the line its first line names (found in one pass over all lines).
        var linkedBy: [Digest: [Int]] = [:]
        for (k, run) in runs.enumerated() { if let p = first(run).line.previous { linkedBy[p, default: []].append(k) } }
        var location: [Digest: (Int, Int)] = [:]
        for (f, folder) in folders.enumerated() {
            for (i, line) in folder.outcome.lines.enumerated() where linkedBy[line.hash] != nil && location[line.hash] == nil { location[line.hash] = (f, i) }
        }
        let starts = runs.indices.filter { first(runs[$0]).line.previous == nil }.sorted { (first(runs[$0]).time ?? "") < (first(runs[$1]).time ?? "") }
        var visited = Set<Int>()
        guard let startRun = starts.first else {
            let earliest = runs.map(first).min { $0.number < $1.number }!
            r.problem("the chain starts at \(at(earliest)), which links to a checkpoint no folder given holds: give the folder of every owner of the recording (the one before took it up to checkpoint \(earliest.number - 1))", checkpoint: earliest.number)
            return runs.map { node($0.folder, $0.end - 1) }.max { $0.number < $1.number }
        }
        if starts.count > 1 { r.problem("\(starts.count) chains start in these folders (\(starts.map { at(first(runs[$0])) }.joined(separator: ", "))): they are not one recording's") }
        if let t = first(runs[startRun]).line.takeover {
            r.failovers.append("\(at(first(runs[startRun]))) took over (\(t["cause"]?.string ?? "?")) from \(t["from"]?.string ?? "an earlier owner"), which had published no checkpoint: the chain starts here")
        }
        var k = startRun
        var i = runs[k].start
        visited.insert(k)
        var end: Node
        walk: while true {
            let here = node(runs[k].folder, i)
            // Runs linking to this line (the first place its hash is found: a copy is one checkpoint).
            let found = location[here.line.hash]
            let isHere = found?.0 == here.folder && found?.1 == here.index
            let takers = (isHere ? linkedBy[here.line.hash] ?? [] : [])
                .sorted { (first(runs[$0]).time ?? "") < (first(runs[$1]).time ?? "") }
            if takers.count > 1 { r.problem("\(takers.count) owners took the recording over after \(at(here)) (\(takers.map { at(first(runs[$0])) }.joined(separator: ", ")))", checkpoint: here.number) }
            guard let taker = takers.first else {
                if i + 1 < runs[k].end { i += 1; continue }
                end = here
                break walk
            }
            let chosen = first(runs[taker])
            if chosen.number != here.number + 1 { r.problem("\(at(chosen)) follows \(at(here)): numbered wrong", checkpoint: chosen.number) }
            let t = chosen.line.takeover ?? .null
            var text = "\(at(chosen)) took over (\(t["cause"]?.string ?? "?")) from \(t["from"]?.string ?? "an earlier owner") after \(at(here)) of \(here.time ?? "?"), "
            text += "its first checkpoint at \(chosen.time ?? "?")"
            if let gap = seconds(from: here.time, to: chosen.time) { text += ": \(String(format: "%.1f", gap)) s between them" }
            // What the dead owner wrote after the checkpoint it published: the rest of its run.
            if i + 1 < runs[k].end {
                let last = node(runs[k].folder, runs[k].end - 1)
                text += "; \(folders[last.folder].label) goes on to checkpoint \(last.number) of \(last.time ?? "?"), not published: it proves that folder's files, off the chain"
            }
            r.failovers.append(text)
            k = taker
            i = runs[k].start
            guard visited.insert(k).inserted else {
                r.problem("the chain comes back to \(at(chosen)): a loop", checkpoint: chosen.number)
                end = chosen
                break walk
            }
        }
        // A run the walk never reached: a checkpoint removed or inserted, or another recording's folder.
        for (k, run) in runs.enumerated() where !visited.contains(k) {
            r.problem("\(at(first(run))) is on no chain from the first checkpoint: a checkpoint was removed or inserted, or a folder is another recording's", checkpoint: first(run).number)
        }
        return end
    }

    static func seconds(from: String?, to: String?) -> Double? {
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        guard let from, let to, let a = try? style.parse(from), let b = try? style.parse(to) else { return nil }
        return b.timeIntervalSince(a)
    }
}
