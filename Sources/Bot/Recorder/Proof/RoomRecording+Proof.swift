import Proof

extension RoomRecording {
    /// Signs checkpoints and the final manifest with `key` (before `start`).
    /// `identity` is the recording the checkpoints name, `instance` the serve instance writing.
    func sign(with key: SigningKey, identity: RecordingIdentity, instance: String? = nil, takeover: ChainTakeover? = nil, head: ChainHead? = nil) {
        let (folder, mix) = (self.folder, mixFile)
        proof = RecordingProof(key: key, folder: folder, identity: identity, instance: instance, takeover: takeover, head: head,
                               locate: { Self.access(ofShown: $0, folder: folder, mix: mix) })
    }

    /// A checkpoint of what is on disk now (every `RecordingProof.interval` seconds).
    func checkpoint() async {
        guard let proof, state == .recording || state == .rejoining else { return }
        await proof.checkpoint(manifest(ended: nil), log: log)
    }
}
