/// A typed host requirement declared in a plugin manifest's `host_requirements`.
///
/// In JSON: `{"kind": "background-mode", "value": "audio", "why": "…"}`. Declarations
/// (`background-mode`, `service`) are satisfied by the host's `[host]` table in `vigil.toml`,
/// the counterpart of iOS `UIBackgroundModes` and Android's `<service>` element. Environment
/// requirements (`audio-output`, `executable`, `dbus-session`) are probed when the host starts.
public struct HostRequirement: Sendable, Hashable {
    /// What is required.
    public enum Kind: Sendable, Hashable {
        /// `[host] background_modes` must include the value (for example `"audio"`).
        case backgroundMode(String)
        /// `[host] services` must include the value (for example `"supervisor"`).
        case service(String)
        /// A sound server or ALSA playback device must be reachable.
        case audioOutput
        /// An executable with this name must be on `PATH`.
        case executable(String)
        /// A D-Bus session bus must be reachable.
        case dbusSession
    }

    /// What is required.
    public let kind: Kind
    /// The plugin's explanation, shown with the diagnostic.
    public let why: String?

    /// Creates a requirement.
    public init(kind: Kind, why: String? = nil) {
        self.kind = kind
        self.why = why
    }

    /// The JSON `kind` tag: `background-mode`, `service`, `audio-output`, `executable`, `dbus-session`.
    public var kindTag: String {
        switch kind {
        case .backgroundMode: "background-mode"
        case .service: "service"
        case .audioOutput: "audio-output"
        case .executable: "executable"
        case .dbusSession: "dbus-session"
        }
    }

    /// The JSON `value`, for the kinds that take one.
    public var value: String? {
        switch kind {
        case .backgroundMode(let v), .service(let v), .executable(let v): v
        case .audioOutput, .dbusSession: nil
        }
    }

    /// True for requirements the host declares in `vigil.toml`; false for probed ones.
    public var isDeclaration: Bool {
        switch kind {
        case .backgroundMode, .service: true
        case .audioOutput, .executable, .dbusSession: false
        }
    }

    /// What is required, as a noun phrase for messages: `an audio output`, `the executable "pactl"`.
    public var noun: String {
        switch kind {
        case .audioOutput: "an audio output"
        case .dbusSession: "a D-Bus session bus"
        case .executable(let name): "the executable \"\(name)\""
        case .backgroundMode(let mode): "background mode \"\(mode)\""
        case .service(let service): "service \"\(service)\""
        }
    }
}
