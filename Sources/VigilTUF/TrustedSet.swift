import VigilBase

/// The metadata a client trusts, and the checks that decide whether new bytes may join it (spec §5,
/// python-tuf's `TrustedMetadataSet`): pure, no I/O, the time fixed when the update starts.
///
/// Roles load in the spec's order: root (any number of times), then timestamp, snapshot, targets,
/// delegated targets. An expired or otherwise non-final timestamp or snapshot still becomes
/// trusted (it protects the next one against rollback) but its update throws, so the caller
/// fetches a newer one; nothing is persisted unless its update returned without throwing.
public struct TrustedSet: Sendable {
    /// The trusted root.
    public private(set) var root: Root
    /// The trusted timestamp, if any.
    public private(set) var timestamp: Timestamp?
    /// The trusted snapshot, if any.
    public private(set) var snapshot: Snapshot?
    /// Trusted targets roles by name (`targets` and delegated ones), with the envelope they came in.
    private var targetsRoles: [String: (targets: Targets, envelope: Envelope)] = [:]
    /// The (delegator, role) pairs whose signatures have been checked against the delegator's
    /// trusted delegation, so a lookup that reaches a role again through the same delegator does not
    /// hash and verify it again (the top-level targets of a 1,000-plugin repository is re-reached by
    /// every lookup). Pairs naming a role are forgotten when that role is loaded anew.
    private var verifiedDelegations: Set<DelegationEdge> = []
    /// The update's start time, seconds since 1970 (spec 5.1: every expiry check uses it).
    public let now: Int64

    /// Trusts `rootBytes` (the root shipped with the client, or the last one persisted) if it is a
    /// root signed by a threshold of its own root keys. Its expiry does not matter yet (5.2).
    public init(rootBytes: [UInt8], now: Int64) throws(TUFError) {
        let envelope = try Envelope(bytes: rootBytes, what: "the trusted root")
        let root = try Root(envelope.signed)
        try envelope.verify(role: root.keys(for: .root), keys: root.keys, name: "the trusted root", by: "itself")
        self.root = root
        self.now = now
    }

    /// 5.3: root version N+1, signed by a threshold of root N's keys and of its own.
    @discardableResult
    public mutating func updateRoot(_ bytes: [UInt8]) throws(TUFError) -> Root {
        precondition(timestamp == nil, "root is updated before timestamp")
        let next = root.common.version + 1
        let name = "root version \(next)"
        let envelope = try Envelope(bytes: bytes, what: name)
        let newRoot = try Root(envelope.signed)
        try envelope.verify(
            role: root.keys(for: .root), keys: root.keys, name: name, by: "trusted root version \(root.common.version)")
        guard newRoot.common.version == next else {
            throw .badVersion(name, "the file says version \(newRoot.common.version)")
        }
        try envelope.verify(role: newRoot.keys(for: .root), keys: newRoot.keys, name: name, by: "itself")
        root = newRoot
        return newRoot
    }

    /// 5.3.10: the final root must not have expired (freeze attack).
    public func checkFinalRoot() throws(TUFError) {
        if root.common.isExpired(at: now) {
            throw .expired("root version \(root.common.version)", expires: root.common.expiresText)
        }
    }

    /// 5.3.11: whether the timestamp or snapshot keys differ between `old` and the trusted root, in
    /// which case the client must forget its timestamp and snapshot (fast-forward recovery).
    public func rotatedOnlineKeys(since old: Root) -> Bool {
        for role in [RoleType.timestamp, .snapshot] {
            let before = old.keys(for: role)
            let after = root.keys(for: role)
            let keysBefore = Set(before.keyIDs.compactMap { old.keys[$0] })
            let keysAfter = Set(after.keyIDs.compactMap { root.keys[$0] })
            if keysBefore != keysAfter || before.threshold != after.threshold { return true }
        }
        return false
    }

    /// What a timestamp update did.
    public enum TimestampOutcome: Sendable, Equatable {
        /// A newer timestamp is trusted: persist it.
        case updated
        /// Same version as the trusted one: keep the trusted one, persist nothing (5.4.3.1).
        case unchanged
    }

    /// 5.4: a timestamp signed by the root's timestamp keys, not older than the trusted one, whose
    /// snapshot version does not go back. Throws ``TUFErrorCode/expired`` after trusting an expired
    /// one (it still guards the next update against rollback).
    public mutating func updateTimestamp(_ bytes: [UInt8]) throws(TUFError) -> TimestampOutcome {
        precondition(snapshot == nil, "timestamp is updated before snapshot")
        try checkFinalRoot()
        let envelope = try Envelope(bytes: bytes, what: "timestamp metadata")
        let new = try Timestamp(envelope.signed)
        try envelope.verify(
            role: root.keys(for: .timestamp), keys: root.keys, name: "timestamp metadata", by: "the root")
        if let old = timestamp {
            if new.common.version < old.common.version {
                throw .badVersion(
                    "timestamp version \(new.common.version)", "older than the trusted version \(old.common.version)")
            }
            if new.common.version == old.common.version { return .unchanged }
            if new.snapshotMeta.version < old.snapshotMeta.version {
                throw .badVersion(
                    "timestamp version \(new.common.version)",
                    "it names snapshot version \(new.snapshotMeta.version), older than the trusted "
                        + "\(old.snapshotMeta.version)")
            }
        }
        timestamp = new
        try checkFinalTimestamp()
        return .updated
    }

    func checkFinalTimestamp() throws(TUFError) {
        guard let timestamp else { throw .malformed("the update", "no trusted timestamp") }
        if timestamp.common.isExpired(at: now) {
            throw .expired("timestamp version \(timestamp.common.version)", expires: timestamp.common.expiresText)
        }
    }

    /// 5.5: a snapshot whose length and hashes match the timestamp's (checked before anything is
    /// parsed, unless `alreadyVerified`: bytes this client persisted itself), signed by the root's
    /// snapshot keys, that neither drops nor rolls back a role the trusted snapshot lists. Throws
    /// after trusting one that is expired or not the version the timestamp names.
    public mutating func updateSnapshot(_ bytes: [UInt8], alreadyVerified: Bool = false) throws(TUFError) {
        precondition(targetsRoles.isEmpty, "snapshot is updated before targets")
        try checkFinalTimestamp()
        guard let timestamp else { return }
        let meta = timestamp.snapshotMeta
        if !alreadyVerified {
            try Hashing.verify(
                bytes, length: meta.length, hashes: meta.hashes, what: "snapshot metadata", metadata: true)
        }
        let envelope = try Envelope(bytes: bytes, what: "snapshot metadata")
        let new = try Snapshot(envelope.signed)
        try envelope.verify(role: root.keys(for: .snapshot), keys: root.keys, name: "snapshot metadata", by: "the root")
        if let old = snapshot {
            for (name, info) in old.meta.sorted(by: { $0.key < $1.key }) {
                guard let now = new.meta[name] else {
                    throw TUFError(
                        code: .missingRole,
                        message: "snapshot version \(new.common.version) no longer lists "
                            + "\(JSONValue.string(name).canonicalText), which the trusted snapshot lists — a "
                            + "repository may not drop a role without rotating its snapshot keys; the trusted "
                            + "snapshot was kept")
                }
                if now.version < info.version {
                    throw .badVersion(
                        "snapshot version \(new.common.version)",
                        "it lists \(name) at version \(now.version), older than the trusted \(info.version)")
                }
            }
        }
        snapshot = new
        try checkFinalSnapshot()
    }

    func checkFinalSnapshot() throws(TUFError) {
        guard let snapshot, let timestamp else { throw .malformed("the update", "no trusted snapshot") }
        if snapshot.common.isExpired(at: now) {
            throw .expired("snapshot version \(snapshot.common.version)", expires: snapshot.common.expiresText)
        }
        if snapshot.common.version != timestamp.snapshotMeta.version {
            throw .mixed(
                "snapshot version \(snapshot.common.version)",
                "is not the version \(timestamp.snapshotMeta.version) the timestamp names")
        }
    }

    /// The trusted targets metadata of `role` (`targets` or a delegated role), if loaded.
    public func targets(_ role: String) -> Targets? { targetsRoles[role]?.targets }

    /// 5.6: targets metadata of `role`, delegated by `delegator` (`root` for the top-level
    /// `targets`): length and hashes as the snapshot lists them, a threshold of the delegator's
    /// keys for this role, the snapshot's version, not expired.
    @discardableResult
    public mutating func updateTargets(_ bytes: [UInt8], role: String, delegator: String) throws(TUFError) -> Targets {
        try checkFinalSnapshot()
        guard let snapshot else { throw .malformed("the update", "no trusted snapshot") }
        let what = role == "targets" ? "targets metadata" : "delegated role \(JSONValue.string(role).canonicalText)"
        guard let meta = snapshot.meta["\(role).json"] else {
            throw TUFError(
                code: .missingRole,
                message: "\(what) is not listed in snapshot version \(snapshot.common.version) — the "
                    + "repository must list every targets role in its snapshot; the role was not used")
        }
        try Hashing.verify(bytes, length: meta.length, hashes: meta.hashes, what: what, metadata: true)
        let envelope = try Envelope(bytes: bytes, what: what)
        let new = try Targets(envelope.signed, role: what)
        try verify(envelope, role: role, delegator: delegator, what: what)
        guard new.common.version == meta.version else {
            throw .mixed(
                "\(what) version \(new.common.version)", "is not the version \(meta.version) the snapshot names")
        }
        if new.common.isExpired(at: now) {
            throw .expired("\(what) version \(new.common.version)", expires: new.common.expiresText)
        }
        // Only a role loaded before can appear in a checked pair (the pass over every pair is not
        // paid for each of a thousand first loads).
        if targetsRoles.updateValue((new, envelope), forKey: role) != nil {
            verifiedDelegations = verifiedDelegations.filter { $0.role != role && $0.delegator != role }
        }
        verifiedDelegations.insert(DelegationEdge(delegator: delegator, role: role))
        return new
    }

    /// Checks an already trusted role again against `delegator`'s delegation: a role reached through
    /// another delegator must carry that delegator's signatures too, not inherit the first one's.
    /// A pair already checked is not checked again.
    public mutating func reverify(role: String, delegator: String) throws(TUFError) {
        guard let entry = targetsRoles[role] else { throw .malformed("the update", "\(role) is not loaded") }
        let edge = DelegationEdge(delegator: delegator, role: role)
        if verifiedDelegations.contains(edge) { return }
        try verify(entry.envelope, role: role, delegator: delegator, what: "delegated role \(role)")
        verifiedDelegations.insert(edge)
    }

    private func verify(_ envelope: Envelope, role: String, delegator: String, what: String) throws(TUFError) {
        if delegator == "root" {
            try envelope.verify(role: root.keys(for: .targets), keys: root.keys, name: what, by: "the root")
            return
        }
        guard let parent = targetsRoles[delegator]?.targets,
            let delegation = parent.delegations.first(where: { $0.name == role })
        else { throw .malformed(what, "\(delegator) does not delegate to it") }
        try envelope.verify(
            role: delegation.keys, keys: parent.delegationKeys, name: what,
            by: "its delegator \(JSONValue.string(delegator).canonicalText)")
    }
}

/// A delegation whose signatures were checked: `delegator` (`root` for the top-level targets)
/// delegates to `role`.
private struct DelegationEdge: Hashable, Sendable {
    var delegator: String
    var role: String
}
