// What a supervisor is told to run (`WorkerSpec`, `SupervisorConfiguration`) is read from
// vigil.toml by VigilSupervisorSettings, which the checks link without this engine.
@_exported public import VigilSupervisorSettings

extension Duration {
    var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}
