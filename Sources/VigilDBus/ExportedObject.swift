internal import CSystemd
import FoundationEssentials
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The server side of an exported object: answers method calls, `Properties` and `Introspect`
/// on the bus thread.
final class ExportedObject: @unchecked Sendable {
    let path: String
    let interfaces: [DBusInterface]
    private let logger: Logger

    private static let propertiesInterface = "org.freedesktop.DBus.Properties"
    private static let introspectableInterface = "org.freedesktop.DBus.Introspectable"

    init(path: String, interfaces: [DBusInterface], logger: Logger) {
        self.path = path
        self.interfaces = interfaces
        self.logger = logger
    }

    private func interface(_ name: String) -> DBusInterface? { interfaces.first { $0.name == name } }

    /// Handles one method call; returns 1 when answered, 0 to let sd-bus answer (unknown interface).
    func handle(_ m: OpaquePointer?) -> Int32 {
        func text(_ p: UnsafePointer<CChar>?) -> String? { p.map { String(cString: $0) } }
        let interfaceName = text(sd_bus_message_get_interface(m))
        let member = text(sd_bus_message_get_member(m)) ?? ""
        let signature = text(sd_bus_message_get_signature(m, 1)) ?? ""
        let sender = text(sd_bus_message_get_sender(m))

        switch interfaceName {
        case Self.introspectableInterface?:
            guard member == "Introspect" else { return 0 }
            return reply(m, [.string(introspectionXML())])
        case Self.propertiesInterface?:
            return handleProperties(m, member: member, signature: signature)
        default:
            let candidates = interfaceName.map { name in interface(name).map { [$0] } ?? [] } ?? interfaces
            if interfaceName != nil && candidates.isEmpty { return 0 }
            guard let method = candidates.lazy.compactMap({ $0.methods.first { $0.name == member } }).first else {
                return replyError(
                    m, DBusErrorName.unknownMethod,
                    "no method \(member) on \(interfaceName ?? "any interface") at \(path)")
            }
            let expected = method.inputs.map(\.signature).joined()
            guard signature == expected else {
                return replyError(m, DBusErrorName.invalidArgs, "\(member) takes (\(expected)), not (\(signature))")
            }
            guard case .success(let arguments) = MessageCoding.readAll(m) else {
                return replyError(m, DBusErrorName.invalidArgs, "cannot read the arguments of \(member)")
            }
            do throws(DBusError) {
                let values = try method.handler(DBusMethodCall(sender: sender, arguments: arguments))
                let produced = values.map(\.signature).joined()
                let declared = method.outputs.map(\.signature).joined()
                guard produced == declared else {
                    logger.error(
                        "D-Bus method returned the wrong types",
                        metadata: ["dbus.member": "\(member)", "dbus.signature": "\(produced)"])
                    return replyError(
                        m, DBusErrorName.failed, "\(member) produced (\(produced)) instead of (\(declared))")
                }
                return reply(m, values)
            } catch {
                return replyError(m, error.name ?? DBusErrorName.failed, error.message)
            }
        }
    }

    private func handleProperties(_ m: OpaquePointer?, member: String, signature: String) -> Int32 {
        let expected = ["Get": "ss", "GetAll": "s", "Set": "ssv"]
        guard let wanted = expected[member] else {
            return replyError(m, DBusErrorName.unknownMethod, "no method \(member) on \(Self.propertiesInterface)")
        }
        guard signature == wanted else {
            return replyError(m, DBusErrorName.invalidArgs, "\(member) takes (\(wanted)), not (\(signature))")
        }
        guard case .success(let arguments) = MessageCoding.readAll(m), let interfaceName = arguments.first?.string
        else {
            return replyError(m, DBusErrorName.invalidArgs, "cannot read the arguments of \(member)")
        }
        guard let interface = interface(interfaceName) else {
            return replyError(m, DBusErrorName.unknownInterface, "no interface \(interfaceName) at \(path)")
        }
        if member == "GetAll" {
            var entries: [DBusDictEntry] = []
            for property in interface.properties {
                guard let value = value(of: property) else {
                    return replyError(m, DBusErrorName.failed, "property \(property.name) has no valid value")
                }
                entries.append(DBusDictEntry(key: .string(property.name), value: .variant(value)))
            }
            return reply(m, [.dictionary(key: "s", value: "v", entries)])
        }
        let name = arguments[1].string ?? ""
        guard let property = interface.properties.first(where: { $0.name == name }) else {
            return replyError(m, DBusErrorName.unknownProperty, "no property \(name) on \(interfaceName)")
        }
        if member == "Get" {
            guard let value = value(of: property) else {
                return replyError(m, DBusErrorName.failed, "property \(name) has no valid value")
            }
            return reply(m, [.variant(value)])
        }
        guard let set = property.set else {
            return replyError(m, DBusErrorName.propertyReadOnly, "property \(name) is read-only")
        }
        let newValue = arguments[2].unwrapped
        guard newValue.signature == property.signature else {
            return replyError(
                m, DBusErrorName.invalidArgs,
                "property \(name) has type \(property.signature), not \(newValue.signature)")
        }
        do throws(DBusError) {
            try set(newValue)
            return reply(m, [])
        } catch {
            return replyError(m, error.name ?? DBusErrorName.failed, error.message)
        }
    }

    /// The property's value, or `nil` (logged) when the getter returned the wrong type.
    private func value(of property: DBusProperty) -> DBusValue? {
        let value = property.get()
        guard value.signature == property.signature else {
            logger.error(
                "D-Bus property getter returned the wrong type",
                metadata: ["dbus.property": "\(property.name)", "dbus.signature": "\(value.signature)"])
            return nil
        }
        return value
    }

    /// The arguments of a PropertiesChanged signal for `names`, or `nil` when none of them signals.
    func propertiesChangedArguments(interface name: String, names: [String]) -> [DBusValue]? {
        guard let interface = interface(name) else { return nil }
        var changed: [DBusDictEntry] = []
        var invalidated: [DBusValue] = []
        for property in interface.properties where names.contains(property.name) {
            switch property.changeSignal {
            case .emits:
                if let value = value(of: property) {
                    changed.append(DBusDictEntry(key: .string(property.name), value: .variant(value)))
                }
            case .invalidates: invalidated.append(.string(property.name))
            case .const, .none: break
            }
        }
        if changed.isEmpty && invalidated.isEmpty { return nil }
        return [.string(name), .dictionary(key: "s", value: "v", changed), .array("s", invalidated)]
    }

    private func reply(_ m: OpaquePointer?, _ values: [DBusValue]) -> Int32 {
        var message: OpaquePointer?
        var r = sd_bus_message_new_method_return(m, &message)
        if r >= 0 { r = MessageCoding.append(values, to: message) }
        if r >= 0 { r = sd_bus_send(nil, message, nil) }
        if let message { sd_bus_message_unref(message) }
        if r < 0 {
            logger.warning("could not send a D-Bus reply", metadata: ["dbus.errno": "\(-r)"])
        }
        return 1
    }

    private func replyError(_ m: OpaquePointer?, _ name: String, _ message: String) -> Int32 {
        var error = sd_bus_error()
        _ = sd_bus_error_set(&error, name, message)
        let r = sd_bus_reply_method_error(m, &error)
        sd_bus_error_free(&error)
        if r < 0 {
            logger.warning("could not send a D-Bus error reply", metadata: ["dbus.errno": "\(-r)"])
        }
        return 1
    }

    /// The `Introspect` answer: the declared interfaces plus the standard ones.
    func introspectionXML() -> String {
        func escape(_ s: String) -> String {
            s.replacing("&", with: "&amp;").replacing("<", with: "&lt;")
                .replacing(">", with: "&gt;").replacing("\"", with: "&quot;")
        }
        func arg(_ a: DBusArgument, _ direction: String?) -> String {
            let dir = direction.map { " direction=\"\($0)\"" } ?? ""
            return "   <arg name=\"\(escape(a.name))\" type=\"\(escape(a.signature))\"\(dir)/>\n"
        }
        var xml = """
            <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
            <node>
             <interface name="org.freedesktop.DBus.Peer">
              <method name="Ping"/>
              <method name="GetMachineId"><arg type="s" name="machine_uuid" direction="out"/></method>
             </interface>
             <interface name="org.freedesktop.DBus.Introspectable">
              <method name="Introspect"><arg name="xml_data" type="s" direction="out"/></method>
             </interface>
             <interface name="org.freedesktop.DBus.Properties">
              <method name="Get"><arg name="interface_name" direction="in" type="s"/><arg name="property_name" direction="in" type="s"/><arg name="value" direction="out" type="v"/></method>
              <method name="GetAll"><arg name="interface_name" direction="in" type="s"/><arg name="props" direction="out" type="a{sv}"/></method>
              <method name="Set"><arg name="interface_name" direction="in" type="s"/><arg name="property_name" direction="in" type="s"/><arg name="value" direction="in" type="v"/></method>
              <signal name="PropertiesChanged"><arg type="s" name="interface_name"/><arg type="a{sv}" name="changed_properties"/><arg type="as" name="invalidated_properties"/></signal>
             </interface>

            """
        for interface in interfaces {
            xml += " <interface name=\"\(escape(interface.name))\">\n"
            for method in interface.methods {
                xml += "  <method name=\"\(escape(method.name))\">\n"
                for a in method.inputs { xml += arg(a, "in") }
                for a in method.outputs { xml += arg(a, "out") }
                xml += "  </method>\n"
            }
            for signal in interface.signals {
                xml += "  <signal name=\"\(escape(signal.name))\">\n"
                for a in signal.arguments { xml += arg(a, nil) }
                xml += "  </signal>\n"
            }
            for property in interface.properties {
                let access = property.set == nil ? "read" : "readwrite"
                xml +=
                    "  <property name=\"\(escape(property.name))\" type=\"\(escape(property.signature))\" access=\"\(access)\">\n"
                xml +=
                    "   <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"\(property.changeSignal.rawValue)\"/>\n"
                xml += "  </property>\n"
            }
            xml += " </interface>\n"
        }
        return xml + "</node>\n"
    }
}
