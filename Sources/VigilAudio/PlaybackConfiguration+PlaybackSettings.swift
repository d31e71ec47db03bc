public import VigilPlugin

extension PlaybackConfiguration {
    /// The configuration an audio plugin's playback keys ask for: every ``PlaybackSettings``
    /// field copied once, here, for every audio plugin, and the sound server where `environment`
    /// says it is when `pulse_server` is unset.
    public init(_ settings: PlaybackSettings, environment: HostEnvironment, applicationName: String) {
        self.init(
            device: settings.device, pulseServer: settings.pulseServer,
            soundServerAddresses: environment.soundServerAddresses, bufferMilliseconds: settings.bufferMilliseconds,
            healthCheckSeconds: settings.healthCheckSeconds,
            retryInitialMilliseconds: settings.retryInitialMilliseconds,
            retryMaxMilliseconds: settings.retryMaxMilliseconds, retryBudget: settings.retryBudget,
            applicationName: applicationName)
    }
}
