import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Standard output through a buffer (exports write millions of lines), standard error unbuffered.
enum Output {
    /// Writes `text` to standard error, with a newline.
    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// Whether standard error is a terminal (progress is shown only then).
    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }
}

/// A buffered writer to a file descriptor: bytes are written when the buffer fills, on `flush()`.
final class BufferedWriter {
    private var buffer: [UInt8] = []
    private let fd: Int32
    private let capacity: Int

    init(fd: Int32 = STDOUT_FILENO, capacity: Int = 1 << 16) {
        self.fd = fd
        self.capacity = capacity
        buffer.reserveCapacity(capacity)
    }

    func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= capacity { flush() }
    }

    func write(bytes: [UInt8]) {
        buffer.append(contentsOf: bytes)
        if buffer.count >= capacity { flush() }
    }

    /// Writes everything buffered. A closed pipe (`lattice export | head`) ends the process quietly.
    func flush() {
        var offset = 0
        while offset < buffer.count {
            let n = buffer.withUnsafeBytes { bytes -> Int in
                guard let base = bytes.baseAddress else { return 0 }
                return Glibc.write(fd, base + offset, bytes.count - offset)
            }
            if n < 0 {
                if errno == EINTR { continue }
                exit(errno == EPIPE ? 0 : 1)
            }
            offset += n
        }
        buffer.removeAll(keepingCapacity: true)
    }

    deinit { flush() }
}

/// A one-line progress indicator on standard error, drawn only when it is a terminal and at most a few
/// times a second.
struct Progress {
    private let label: String
    private let total: Int?
    private let enabled = Output.stderrIsTerminal
    private var lastDraw = Date.distantPast
    private(set) var count = 0

    init(_ label: String, total: Int? = nil) {
        self.label = label
        self.total = total
    }

    /// Counts one more item, redrawing now and then.
    mutating func step() {
        count += 1
        guard enabled, count % 1024 == 0 else { return }
        let now = Date()
        guard now.timeIntervalSince(lastDraw) > 0.2 else { return }
        lastDraw = now
        draw()
    }

    private func draw() {
        var line = "\r\(label) \(count)"
        if let total, total > 0 {
            let width = 30
            let done = min(width, count * width / total)
            line += "/\(total) [" + String(repeating: "#", count: done) + String(repeating: " ", count: width - done) + "]"
        }
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// Clears the line (when anything was drawn).
    func finish() {
        guard enabled, lastDraw != .distantPast else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
