import GStreamerKit

extension PipelineLibrary {
    /// Links `pad` to a new `discard` branch in `pipeline` and returns it: a stream nobody
    /// writes still needs a sink, or it stalls its PeerConnection.
    func discard(_ pad: Pad, mid: String, in pipeline: Pipeline) throws -> Bin {
        let bin = try pipeline.addBin(description: description("discard"), name: "discard-\(mid)")
        bin.syncStateWithParent()
        try pad.link(to: try bin.staticPad("sink"))
        return bin
    }
}
