/// What a relay out to a destination lost, said the same way by the command and the service
/// (its last line, exit 74; a job `failed` with the reason).
public enum RelayLosses {
    /// The losses in words, or nil if the destination got everything that opened. Frames that
    /// opened before the first output was up are its start, not a loss; once it has failed,
    /// what it missed is.
    public static func describe(unsent: Int, failures: Int, droppedInOutput: Int, lateAudioMilliseconds: Int = 0) -> String? {
        var lost: [String] = []
        if failures > 0, unsent > 0 { lost.append("\(unsent) opened frames were not sent while the destination was down (\(failures) destination failures)") }
        if droppedInOutput > 0 { lost.append("\(droppedInOutput) frames were dropped in the output: the destination took the stream slower than it came") }
        if lateAudioMilliseconds > 0 {
            lost.append("the mixer dropped \(lateAudioMilliseconds) ms of participants' audio that came too late (the machine is short of CPU)")
        }
        return lost.isEmpty ? nil : lost.joined(separator: "; ")
    }
}
