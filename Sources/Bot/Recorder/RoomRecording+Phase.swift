extension RoomRecording.State {
    /// As a service shows it.
    var phase: LiveStatus.Phase {
        switch self {
        case .idle, .starting: .starting
        case .recording: .running
        case .rejoining: .reconnecting
        case .finishing: .stopping
        case .finished: .done
        }
    }
}
