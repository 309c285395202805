import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Reads a file descriptor line by line, a chunk at a time: the input is never held whole in memory.
struct LineReader {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false
    /// The number of the line `next()` returned last (1 for the first).
    private(set) var lineNumber = 0

    init(fd: Int32) { self.fd = fd }

    /// The next line without its newline, or nil at the end of the input.
    mutating func next() throws -> [UInt8]? {
        while true {
            if let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[start..<newline])
                start = newline + 1
                lineNumber += 1
                return line.last == UInt8(ascii: "\r") ? Array(line.dropLast()) : line
            }
            if atEnd {
                guard start < buffer.count else { return nil }
                let line = Array(buffer[start...])
                start = buffer.count
                lineNumber += 1
                return line
            }
            buffer.removeFirst(start)
            start = 0
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            let n = chunk.withUnsafeMutableBytes { bytes in bytes.baseAddress.map { read(fd, $0, bytes.count) } ?? 0 }
            if n < 0 {
                if errno == EINTR { continue }
                throw CommandFailure.failure("cannot read the input: \(String(cString: strerror(errno))).")
            }
            if n == 0 { atEnd = true } else { buffer.append(contentsOf: chunk[..<n]) }
        }
    }

    /// Everything left, whole (for the JSON format, one document).
    mutating func rest() throws -> [UInt8] {
        var all: [UInt8] = []
        while let line = try next() {
            all.append(contentsOf: line)
            all.append(UInt8(ascii: "\n"))
        }
        return all
    }
}
