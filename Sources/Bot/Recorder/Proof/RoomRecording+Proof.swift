import Proof

extension RoomRecording {
    /// Signs checkpoints and the final manifest with `key` (before `start`).
    func sign(with key: SigningKey) {
        proof = RecordingProof(key: key, directory: directory)
    }

    /// A checkpoint of what is on disk now (every `RecordingProof.interval` seconds).
    func checkpoint() async {
        guard let proof, state == .recording || state == .rejoining else { return }
        await proof.checkpoint(manifest(ended: nil), log: log)
    }
}
