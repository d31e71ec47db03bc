/// A throwaway CA and a server certificate for 127.0.0.1 (and `localhost`) signed by it, plus a
/// second CA that signed nothing, made by `openssl` at test time in a directory: the PEM files an
/// HTTPS test server (``TUFMirrorServer``'s `tls`) and its clients (`ca_file`, `--ca-file`) need.
public struct TestCertificateAuthority: Sendable {
    /// The CA that signed the server's certificate.
    public let caFile: String
    /// A CA that signed nothing: trusting it alone fails every handshake.
    public let wrongCAFile: String
    /// The server's certificate and key.
    public let certificate: String
    public let key: String

    /// Makes the files in `directory` (about a second of `openssl`).
    public static func make(in directory: TestDirectory) async throws -> TestCertificateAuthority {
        func openssl(_ arguments: [String]) async throws {
            let result = try await RuntimeFixtures.run("/usr/bin/openssl", arguments, timeout: 30)
            guard result.status == 0 else { throw FixtureError("openssl \(arguments): \(result.stderr)") }
        }
        let dir = directory
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        let caExtensions = ["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"]
        for name in ["ca", "wrong-ca"] {
            try await openssl(
                ["req", "-x509"] + ec + caExtensions + [
                    "-keyout", dir.url("\(name).key"), "-out", dir.url("\(name).pem"), "-days", "2", "-subj",
                    "/CN=Vigil test \(name)",
                ])
        }
        try await openssl(
            ["req"] + ec + [
                "-keyout", dir.url("server.key"), "-out", dir.url("server.csr"), "-subj", "/CN=127.0.0.1",
            ])
        _ = try dir.write(
            "server.ext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
        try await openssl([
            "x509", "-req", "-in", dir.url("server.csr"), "-CA", dir.url("ca.pem"), "-CAkey", dir.url("ca.key"),
            "-CAcreateserial", "-out", dir.url("server.pem"), "-days", "2", "-extfile", dir.url("server.ext"),
        ])
        return TestCertificateAuthority(
            caFile: dir.url("ca.pem"), wrongCAFile: dir.url("wrong-ca.pem"), certificate: dir.url("server.pem"),
            key: dir.url("server.key"))
    }
}
