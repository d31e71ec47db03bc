import VigilBase
import VigilCore

extension PluginFailure {
    /// The event an operator alerts on that this failure is logged as (its journal `MESSAGE_ID`):
    /// a manifest signed by another key than the trusted one is a refused key rotation; anything
    /// else is a failed plugin.
    var operatorEvent: OperatorEvent { code == .refused(.keyRotation) ? .keyRotationRefused : .pluginFailed }
}
