import Proof

extension RoomRecording {
    /// Signs checkpoints and the final manifest with `key` (before `start`).
    func sign(with key: SigningKey, takeover: ChainTakeover? = nil, head: ChainHead? = nil) {
        let (folder, mix) = (self.folder, mixFile)
        proof = RecordingProof(key: key, folder: folder, takeover: takeover, head: head,
                               locate: { Self.access(ofShown: $0, folder: folder, mix: mix) })
    }

    /// A checkpoint of what is on disk now (every `RecordingProof.interval` seconds).
    func checkpoint() async {
        guard let proof, state == .recording || state == .rejoining else { return }
        await proof.checkpoint(manifest(ended: nil), log: log)
    }
}
