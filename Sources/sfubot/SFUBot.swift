import ArgumentParser

@main
struct SFUBot: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sfubot",
        abstract: "A headless, end-to-end-encrypted participant for ECall calls on Janus VideoRoom.",
        discussion: """
            Records calls (decrypted, per participant), plays files into calls sealed like any phone \
            in them, and load-tests rooms. Media frames are sealed in the call's frame format (ECall's, \
            libwebrtc's FrameCryptor as PQSRTC and LiveKit use it, or SFrame); Janus never sees them \
            in the clear.
            """,
        subcommands: [Play.self, Record.self, Load.self, Serve.self, Room.self, Keys.self, Mjr.self, AgentCommand.self, Verify.self, FrameTool.self, RelayCommand.self])
}
