/// Keeps webrtcbin's transceivers of a multistream subscription receiving across Janus's
/// recycling of m-lines.
///
/// When a subscribed publisher leaves, Janus 1.1.2's VideoRoom marks its m-lines `a=inactive`
/// in the next offer, and gives them to the next feed of the same type and codec it subscribes
/// (`janus_videoroom_subscriber_stream_add_or_replace`: "Reusing m-line"), offering them
/// `a=sendonly` again; nothing in its API avoids this. webrtcbin 1.22 cannot bring a transceiver
/// back from inactive: the answer fails with "transceiver direction changes are not
/// implemented", Janus never gets it, and the new feed (and every later change of that
/// subscription) is lost.
///
/// So webrtcbin never sees `inactive` on an audio or video m-line: it is handed those as
/// `sendonly`, and keeps their transceivers `recvonly`, with pads that simply carry nothing
/// until the m-line is reused (Janus sends nothing on an inactive m-line). Janus still gets an
/// answer that matches its offer: those m-lines go back to `a=inactive` in it.
enum RecycledMLines {
    /// `offer` with every `a=inactive` of an audio or video m-section made `a=sendonly`, and
    /// the mids of those sections (m-sections without a mid are left alone).
    static func held(offer: String) -> (sdp: String, mids: Set<String>) {
        var lines = lines(offer)
        var mids: Set<String> = []
        for section in sections(lines) where section.media == "audio" || section.media == "video" {
            guard let mid = section.mid, let i = section.range.first(where: { lines[$0] == "a=inactive" }) else { continue }
            lines[i] = "a=sendonly"
            mids.insert(mid)
        }
        return (join(lines, like: offer), mids)
    }

    /// `answer` with the sections of `mids` made `a=inactive` again (webrtcbin answered them
    /// `a=recvonly`), as Janus offered them.
    static func restored(answer: String, mids: Set<String>) -> String {
        guard !mids.isEmpty else { return answer }
        var lines = lines(answer)
        for section in sections(lines) {
            guard let mid = section.mid, mids.contains(mid) else { continue }
            for i in section.range where ["a=recvonly", "a=sendrecv", "a=sendonly"].contains(lines[i]) { lines[i] = "a=inactive" }
        }
        return join(lines, like: answer)
    }

    private struct Section {
        var media: String
        var mid: String?
        var range: Range<Int>
    }

    private static func lines(_ sdp: String) -> [String] {
        // "\r\n" is one Character in Swift: split on any newline.
        sdp.split(whereSeparator: \.isNewline).map(String.init)
    }

    /// Joins with the line ending `original` uses, ending in one as SDP does.
    private static func join(_ lines: [String], like original: String) -> String {
        let end = original.contains("\r\n") ? "\r\n" : "\n"
        return lines.joined(separator: end) + end
    }

    /// The m-sections of `lines`: their media type, mid and lines (the `m=` line included).
    private static func sections(_ lines: [String]) -> [Section] {
        let starts = lines.indices.filter { lines[$0].hasPrefix("m=") }
        return starts.enumerated().map { n, start in
            let end = n + 1 < starts.count ? starts[n + 1] : lines.count
            let media = String(lines[start].dropFirst(2).prefix { $0 != " " })
            let mid = lines[start..<end].first { $0.hasPrefix("a=mid:") }.map { String($0.dropFirst(6)) }
            return Section(media: media, mid: mid, range: start..<end)
        }
    }
}
