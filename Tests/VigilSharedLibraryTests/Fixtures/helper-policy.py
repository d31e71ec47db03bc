"""Sends vigil-plugin-helper one POLICY record and prints its reply (vigil_helper.h's protocol).

Usage: helper-policy.py HELPER POLICY. The helper gets the socket of a SOCK_SEQPACKET pair on
descriptor 3, as the host starts it; the reply's type, code and detail are printed one a line.
"""
import os
import socket
import struct
import subprocess
import sys

helper, policy = sys.argv[1], sys.argv[2].encode()
host, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
# Python's descriptors are not inherited; dup2 makes descriptor 3 an inheritable copy of the socket.
process = subprocess.Popen([helper], preexec_fn=lambda: os.dup2(child.fileno(), 3), close_fds=False)
child.close()
host.settimeout(10)
host.send(struct.pack("=II", 1, len(policy)) + policy)  # VIGIL_HELPER_POLICY, one string field
reply = host.recv(65536)
fields, offset = [], 4
for _ in range(3):  # code, variant, detail
    (length,) = struct.unpack_from("=I", reply, offset)
    fields.append(reply[offset + 4 : offset + 4 + length].decode())
    offset += 4 + length
print("type", struct.unpack_from("=I", reply, 0)[0])
print("code", fields[0])
print("detail", fields[2])
host.close()
process.wait(timeout=10)
