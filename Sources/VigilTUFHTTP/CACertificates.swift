import NIOSSL
import VigilTUF

/// The certificates of a CA file (`[repository] ca_file`, `vigil-tuf-client --ca-file`) as the
/// fetcher's TLS context reads them: swift-nio-ssl's PEM reader (BoringSSL's `PEM_read_bio_X509`
/// over the bytes, one or more `CERTIFICATE` blocks, other blocks skipped). `vigil check` judges a
/// `ca_file` with ``problem(_:)``, so what it accepts is what a fetch will trust.
public enum CACertificates {
    /// The largest CA file read (a whole system bundle is about 220 kB), as `[repository] ca_file`'s.
    static let cap = 1_048_576

    /// The file's bytes: a regular file (no link), at most ``cap``.
    static func read(_ path: String) throws(CoreError) -> [UInt8] {
        try SafeFile.read(path, cap: cap, what: "CA file")
    }

    /// The certificates in `pem`; throws what swift-nio-ssl threw when there is none or one does
    /// not parse.
    static func load(_ pem: [UInt8]) throws -> [NIOSSLCertificate] {
        try NIOSSLCertificate.fromPEMBytes(pem)
    }

    /// What is wrong with `pem` as a CA file and how to fix it, or nil when swift-nio-ssl reads at
    /// least one certificate from it and it holds no private key (whoever reads a CA's key can
    /// impersonate every mirror: it never belongs on a box).
    public static func problem(_ pem: [UInt8]) -> String? {
        let text = String(decoding: pem, as: UTF8.self)
        let fix =
            "put the private CA's certificate there in PEM (`openssl x509 -in CA.crt -out FILE`; from DER: "
            + "`openssl x509 -inform der -in CA.der -out FILE`)"
        if text.contains("-----BEGIN"), text.contains("PRIVATE KEY-----") {
            return "holds a private key (a -----BEGIN … PRIVATE KEY----- block) — a CA file carries certificates "
                + "only: \(fix), and keep the key off this machine"
        }
        if pem.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
            return "is empty — \(fix)"
        }
        do {
            _ = try load(pem)
            return nil
        } catch {
            if !text.contains("-----BEGIN CERTIFICATE-----") {
                return "holds no PEM certificate (no -----BEGIN CERTIFICATE----- block) — \(fix)"
            }
            return "holds a certificate that does not parse (swift-nio-ssl: \(error)) — \(fix)"
        }
    }
}
