#!/usr/bin/env python3
"""Builds a TUF repository of Vigil plugins with python-tuf's Metadata API (docs/signing.md,
"Plugin repositories"): the tests' repositories, the benchmark's, and the publishing example.

Run it with the TUF virtual environment's python (`$(scripts/tuf-venv.sh) make-repo.py …`).

    make-repo.py init REPO [--expires-days N]
    make-repo.py publish REPO PLUGIN_DIR... --key NAME=NAME.key...
    make-repo.py rotate REPO ROLE             # root, targets, snapshot or timestamp: a new key
    make-repo.py expire REPO ROLE [--seconds S]   # re-sign ROLE to expire S seconds from now (default -60)
    make-repo.py serve DIR [--port-file FILE] [--remove-on-exit]  # a loopback HTTP server on a free port

The layout under REPO (serve REPO as a mirror): `metadata/` (`N.root.json`, `timestamp.json`,
`N.snapshot.json`, `N.targets.json`, `N.NAME.json`; consistent snapshots) and `targets/`
(`NAME/HASH.plugin.json`, …). The repository's secret keys are in `REPO.keys/`, beside it and never
served, unencrypted: only for tests and examples (a real repository keeps root and targets offline).

Top-level targets delegate `NAME/*` (terminating) to a role named NAME whose one key is the
plugin's own Ed25519 key, read from its minisign secret key file (unencrypted, as
`vigil plugin keygen` writes it): so the repository serves only what the plugin's author signed.
Each plugin's targets are `NAME/plugin.json` (with `custom: {"version": …}`), `NAME/plugin.json.minisig`,
`NAME/plugin.pub` and every file the manifest lists (resources, the shared library).
"""

import argparse
import base64
import datetime
import hashlib
import http.server
import json
import os
import shutil
import sys
import threading

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from securesystemslib.signer import CryptoSigner, SSlibKey
from tuf.api.metadata import (
    DelegatedRole,
    Delegations,
    Metadata,
    MetaFile,
    Root,
    Snapshot,
    TargetFile,
    Targets,
    Timestamp,
)
from tuf.api.serialization.json import JSONSerializer

TOP = ["root", "timestamp", "snapshot", "targets"]


def now():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def signer_from_seed(seed):
    private = Ed25519PrivateKey.from_private_bytes(seed)
    public = SSlibKey.from_crypto(private.public_key())
    return CryptoSigner(private, public)


def new_seed():
    return Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )


def minisign_seed(path):
    """The Ed25519 seed of an unencrypted minisign secret key file."""
    lines = open(path, encoding="utf-8").read().splitlines()
    raw = base64.b64decode(lines[1])
    if raw[0:2] != b"Ed" or raw[2:4] != b"\0\0":
        sys.exit(f"make-repo: {path} is not an unencrypted minisign Ed25519 secret key")
    # algorithm 2, kdf 2, checksum algorithm 2, salt 32, opslimit 8, memlimit 8, key id 8, then the key
    return raw[62 : 62 + 32]


class Repo:
    def __init__(self, path):
        self.path = path
        self.meta_dir = os.path.join(path, "metadata")
        self.targets_dir = os.path.join(path, "targets")
        # Beside the repository, never inside it: serving REPO must not serve the secret keys.
        self.keys_file = os.path.join(os.path.normpath(path) + ".keys", "keys.json")
        self.seeds = {}  # role -> hex seed
        self.md = {}  # role -> Metadata
        self.changed = set()

    # --- storage -------------------------------------------------------------------------------

    def load(self):
        with open(self.keys_file, encoding="utf-8") as f:
            self.seeds = json.load(f)
        roots = [int(n.split(".")[0]) for n in os.listdir(self.meta_dir) if n.endswith(".root.json")]
        self.md["root"] = Metadata.from_file(os.path.join(self.meta_dir, f"{max(roots)}.root.json"))
        self.md["timestamp"] = Metadata.from_file(os.path.join(self.meta_dir, "timestamp.json"))
        snap = self.md["timestamp"].signed.snapshot_meta.version
        self.md["snapshot"] = Metadata.from_file(os.path.join(self.meta_dir, f"{snap}.snapshot.json"))
        for name, meta in self.md["snapshot"].signed.meta.items():
            role = name[: -len(".json")]
            self.md[role] = Metadata.from_file(os.path.join(self.meta_dir, f"{meta.version}.{name}"))

    def save_keys(self):
        os.makedirs(os.path.dirname(self.keys_file), mode=0o700, exist_ok=True)
        fd = os.open(self.keys_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(self.seeds, f, indent=1, sort_keys=True)

    def signer(self, role):
        return signer_from_seed(bytes.fromhex(self.seeds[role]))

    def write(self, role):
        md = self.md[role]
        md.signatures.clear()
        md.sign(self.signer(role), append=True)
        if role == "root":
            name = f"{md.signed.version}.root.json"
        elif role == "timestamp":
            name = "timestamp.json"
        else:
            name = f"{md.signed.version}.{role}.json"
        md.to_file(os.path.join(self.meta_dir, name), JSONSerializer(compact=False))

    # --- changes -------------------------------------------------------------------------------

    def bump(self, role, expires=None):
        signed = self.md[role].signed
        signed.version += 1
        signed.expires = expires or (now() + datetime.timedelta(days=self.days(role)))
        self.changed.add(role)

    def days(self, role):
        return {"root": 365, "targets": 90, "snapshot": 30, "timestamp": 7}.get(role, 90)

    def commit(self, timestamp_expires=None, snapshot_expires=None):
        """Writes every changed targets role, then a new snapshot and timestamp naming them."""
        targets_roles = [r for r in self.changed if r not in ("root", "snapshot", "timestamp")]
        for role in sorted(targets_roles):
            self.write(role)
            self.md["snapshot"].signed.meta[f"{role}.json"] = MetaFile(version=self.md[role].signed.version)
        if targets_roles or "snapshot" in self.changed or snapshot_expires:
            if "snapshot" not in self.changed:
                self.bump("snapshot")
            if snapshot_expires:
                self.md["snapshot"].signed.expires = snapshot_expires
            self.write("snapshot")
        self.md["timestamp"].signed.snapshot_meta = MetaFile(version=self.md["snapshot"].signed.version)
        if "timestamp" not in self.changed:
            self.bump("timestamp")
        if timestamp_expires:
            self.md["timestamp"].signed.expires = timestamp_expires
        self.write("timestamp")
        self.changed.clear()

    def init(self, days):
        os.makedirs(self.meta_dir, exist_ok=True)
        os.makedirs(self.targets_dir, exist_ok=True)
        for role in TOP:
            self.seeds[role] = new_seed().hex()
        self.save_keys()
        expires = now() + datetime.timedelta(days=days)
        root = Root(expires=expires, consistent_snapshot=True)
        for role in TOP:
            root.add_key(self.signer(role).public_key, role)
        self.md["root"] = Metadata(root)
        self.md["targets"] = Metadata(Targets(expires=expires, delegations=Delegations(keys={}, roles={})))
        self.md["snapshot"] = Metadata(Snapshot(expires=expires))
        self.md["timestamp"] = Metadata(Timestamp(expires=expires))
        self.write("root")
        self.changed.add("targets")
        self.md["targets"].signed.version = 1
        self.md["snapshot"].signed.version = 1
        self.changed.add("snapshot")
        self.md["timestamp"].signed.version = 0
        self.commit()

    def publish(self, directory, key_file):
        name = os.path.basename(os.path.normpath(directory))
        with open(os.path.join(directory, "plugin.json"), "rb") as f:
            manifest_bytes = f.read()
        manifest = json.loads(manifest_bytes)
        if manifest.get("name") != name:
            sys.exit(f"make-repo: {directory}/plugin.json names {manifest.get('name')!r}, not {name!r}")
        seed = minisign_seed(key_file).hex()
        key = signer_from_seed(bytes.fromhex(seed)).public_key
        delegations = self.md["targets"].signed.delegations
        if name not in delegations.roles or self.seeds.get(name) != seed:
            # A new plugin, or its author's key changed: (re)delegate NAME/* to that key.
            old = delegations.roles.get(name)
            if old:
                for keyid in old.keyids:
                    delegations.keys.pop(keyid, None)
            delegations.keys[key.keyid] = key
            delegations.roles[name] = DelegatedRole(
                name=name, keyids=[key.keyid], threshold=1, terminating=True, paths=[f"{name}/*"]
            )
            self.seeds[name] = seed
            self.save_keys()
            self.bump("targets")
        files = ["plugin.json", "plugin.json.minisig", "plugin.pub"]
        files += [r["path"] for r in manifest.get("resources", [])]
        library = manifest.get("shared_library")
        if isinstance(library, dict) and library.get("path") and library["path"] not in files:
            files.append(library["path"])
        if name in self.md:
            role = self.md[name]
            role.signed.targets.clear()
            self.bump(name)
        else:
            role = Metadata(Targets(expires=now() + datetime.timedelta(days=90)))
            self.md[name] = role
            self.changed.add(name)
        for relative in files:
            with open(os.path.join(directory, relative), "rb") as f:
                data = f.read()
            path = f"{name}/{relative}"
            target = TargetFile.from_data(path, data, ["sha256"])
            if relative == "plugin.json":
                target.unrecognized_fields["custom"] = {"version": manifest.get("version")}
            role.signed.targets[path] = target
            out = os.path.join(self.targets_dir, os.path.dirname(path))
            os.makedirs(out, exist_ok=True)
            digest = hashlib.sha256(data).hexdigest()
            with open(os.path.join(out, f"{digest}.{os.path.basename(path)}"), "wb") as f:
                f.write(data)

    def rotate(self, role):
        """A new key for a top-level role, in a new root signed by the old and the new root keys."""
        root = self.md["root"]
        old = self.signer("root") if role == "root" else None
        for keyid in list(root.signed.roles[role].keyids):
            root.signed.revoke_key(keyid, role)
        self.seeds[role] = new_seed().hex()
        self.save_keys()
        root.signed.add_key(self.signer(role).public_key, role)
        root.signed.version += 1
        root.signatures.clear()
        root.sign(self.signer("root"), append=True)
        if old:
            root.sign(old, append=True)
        root.to_file(
            os.path.join(self.meta_dir, f"{root.signed.version}.root.json"), JSONSerializer(compact=False)
        )
        # Everything the rotated key signs is signed again with the new one.
        if role in ("targets", "snapshot"):
            self.bump(role)
        self.commit()

    def expire(self, role, seconds):
        when = now() + datetime.timedelta(seconds=seconds)
        if role == "timestamp":
            self.commit(timestamp_expires=when)
        elif role == "snapshot":
            self.commit(snapshot_expires=when)
        else:
            self.bump(role, expires=when)
            self.commit()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


def serve(directory, port_file, remove_on_exit):
    handler = lambda *a, **k: QuietHandler(*a, directory=directory, **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    parent = os.getppid()

    def watch():
        # Ends with the test process that started it, however that ends.
        while os.getppid() == parent:
            threading.Event().wait(0.5)
        if remove_on_exit:
            shutil.rmtree(directory, ignore_errors=True)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()
    port = server.server_address[1]
    if port_file:
        tmp = port_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(f"{port}\n")
        os.rename(tmp, port_file)
    print(port, flush=True)
    server.serve_forever()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("init")
    p.add_argument("repo")
    p.add_argument("--expires-days", type=int, default=365)
    p = sub.add_parser("publish")
    p.add_argument("repo")
    p.add_argument("plugins", nargs="+")
    p.add_argument("--key", action="append", default=[], help="NAME=PATH of the plugin's minisign secret key")
    p = sub.add_parser("rotate")
    p.add_argument("repo")
    p.add_argument("role", choices=TOP)
    p = sub.add_parser("expire")
    p.add_argument("repo")
    p.add_argument("role")
    p.add_argument("--seconds", type=int, default=-60)
    p = sub.add_parser("serve")
    p.add_argument("directory")
    p.add_argument("--port-file")
    p.add_argument("--remove-on-exit", action="store_true", help="remove DIR when the parent process ends")
    args = parser.parse_args()

    if args.command == "serve":
        serve(args.directory, args.port_file, args.remove_on_exit)
        return
    repo = Repo(args.repo)
    if args.command == "init":
        repo.init(args.expires_days)
        return
    repo.load()
    if args.command == "publish":
        keys = dict(k.split("=", 1) for k in args.key)
        for directory in args.plugins:
            name = os.path.basename(os.path.normpath(directory))
            if name not in keys:
                sys.exit(f"make-repo: no --key {name}=PATH for {directory}")
            repo.publish(directory, keys[name])
        repo.commit()
    elif args.command == "rotate":
        repo.rotate(args.role)
    elif args.command == "expire":
        if args.role not in repo.md:
            sys.exit(f"make-repo: no role {args.role!r}")
        repo.expire(args.role, args.seconds)


if __name__ == "__main__":
    main()
