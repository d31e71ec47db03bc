import Glibc
import VigilBase

/// A yes/no question asked on the controlling terminal, where the operator is.
///
/// The question is written to and the answer read from `/dev/tty`, as ssh and sudo do, so it works
/// when the standard streams are pipes. SwiftPM starts a command plugin (and so the `vigil` it
/// runs) in a background process group, where reading the terminal fails (EIO, or a SIGTTIN stop);
/// for the question the prompt moves its process group to the terminal's foreground and moves the
/// previous foreground group back afterwards.
enum TerminalPrompt {
    /// True when one of the standard streams is a terminal and a controlling terminal can be
    /// opened: someone can be asked. (A process whose streams are all files or pipes — CI, a
    /// script — is never asked, even when it has a controlling terminal.)
    static var isAvailable: Bool {
        guard isatty(0) == 1 || isatty(1) == 1 || isatty(2) == 1 else { return false }
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }

    /// Asks `question` (followed by ` [y/N] `); only "y" or "yes" is a yes. `nil` when there is
    /// no terminal to ask on or it could not be read (end of input, an error).
    static func confirm(_ question: String) -> Bool? {
        fflush(nil)  // what was printed before the question comes before it
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let restore = takeForeground(fd)
        defer { restore() }
        guard writeAll(fd, question + " [y/N] ") else { return nil }
        guard let line = readLine(fd) else { return nil }
        let answer = line.trimmingCharacters(in: " \t\r").lowercased()
        return answer == "y" || answer == "yes"
    }

    /// Makes this process's group the terminal's foreground group if it is not, and returns what
    /// puts the previous one back. SIGTTOU is ignored meanwhile: a background group that changes
    /// the foreground group would otherwise be stopped by it.
    private static func takeForeground(_ fd: Int32) -> () -> Void {
        let previous = tcgetpgrp(fd)
        let mine = getpgrp()
        guard previous > 0, previous != mine else { return {} }
        let oldHandler = signal(SIGTTOU, SIG_IGN)
        guard tcsetpgrp(fd, mine) == 0 else {
            signal(SIGTTOU, oldHandler)
            return {}
        }
        return {
            _ = tcsetpgrp(fd, previous)
            signal(SIGTTOU, oldHandler)
        }
    }

    private static func writeAll(_ fd: Int32, _ text: String) -> Bool {
        (try? FileIO.writeAll(fd, Array(text.utf8))) != nil
    }

    /// One line from `fd`, without its newline; `nil` at end of input before any byte, or on an error.
    private static func readLine(_ fd: Int32) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = read(fd, &byte, 1)
            if n < 0, errno == EINTR { continue }
            if n <= 0 { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
            if bytes.count > 4096 { return nil }
        }
    }
}
