#!/usr/bin/env python3
"""A TUF mirror on loopback for tests: honest, or hostile in one of several ways.

    tuf_mirror.py --publication old=DIR --publication new=DIR [--tls CERT KEY]

Each publication directory holds the files of one state of a repository (metadata/…, targets/…).
The first path segment of a request picks the mirror's behaviour; the rest is the file:

    /good/F      F from "new"
    /old/F       F from "old" (a frozen or stale mirror)
    /mix/F       metadata/timestamp.json from "new", everything else from "old"
    /mix-targets/F  timestamp and snapshot from "new", everything else from "old"
    /endless/F   timestamp.json and every target: 200 without a length, then bytes forever;
                 the rest from "new"
    /slow/F      F from "new", one byte every 50 ms
    /stall/F     the headers of F from "new", then nothing
    /drop/F      the headers and half of F from "new", then the connection closes
    /reset/F     the request is read, then the connection is reset (no answer at all)
    /_stats      a JSON object: bytes sent by each behaviour so far

It prints its port (bound to 127.0.0.1, port 0) on a line of its own once it listens, and runs until
it is killed. Standard library only.
"""

import argparse
import json
import os
import socket
import ssl
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PUBLICATIONS = {}
SENT = {}
LOCK = threading.Lock()


def count(mode, n):
    with LOCK:
        SENT[mode] = SENT.get(mode, 0) + n


def source(mode, path):
    """The publication a behaviour serves `path` from."""
    if mode == "old":
        return "old"
    if mode == "mix":
        return "new" if path == "metadata/timestamp.json" else "old"
    if mode == "mix-targets":
        return "new" if path in ("metadata/timestamp.json", "metadata/snapshot.json") else "old"
    return "new"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Buffered: an honest answer leaves in one write (headers and body), so a loaded machine cannot
    # split it into a slow-looking trickle; the hostile behaviours flush where they mean to.
    wbufsize = -1

    def log_message(self, *args):
        pass

    def send(self, mode, data):
        self.wfile.write(data)
        self.wfile.flush()
        count(mode, len(data))

    def do_GET(self):
        parts = self.path.lstrip("/").split("/", 1)
        mode, path = parts[0], parts[1] if len(parts) > 1 else ""
        if mode == "_stats":
            body = json.dumps(SENT).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if mode == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        if mode == "endless" and (path == "metadata/timestamp.json" or path.startswith("targets/")):
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            chunk = b"x" * 65536
            try:
                while True:
                    self.send(mode, chunk)
            except OSError:
                return
        root = PUBLICATIONS.get(source(mode, path))
        file = os.path.normpath(os.path.join(root or "/nonexistent", path))
        if root is None or not file.startswith(root + os.sep) or not os.path.isfile(file):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with open(file, "rb") as f:
            data = f.read()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            if mode == "slow":
                for i in range(len(data)):
                    self.send(mode, data[i : i + 1])
                    time.sleep(0.05)
            elif mode == "stall":
                self.wfile.flush()
                time.sleep(3600)
            elif mode == "drop":
                self.send(mode, data[: len(data) // 2])
                self.close_connection = True
            else:
                self.send(mode, data)
        except OSError:
            self.close_connection = True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--publication", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    args = parser.parse_args()
    for item in args.publication:
        name, _, directory = item.partition("=")
        PUBLICATIONS[name] = os.path.realpath(directory)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if args.tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls[0], args.tls[1])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    # Ends with the test process that started it, however that one ends.
    parent = os.getppid()

    def watch_parent():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch_parent, daemon=True).start()
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
