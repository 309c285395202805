/// A plain-text table for people: a header, a rule, and left-aligned columns as wide as their widest cell.
struct TextTable {
    private let header: [String]
    private var rows: [[String]] = []

    init(_ header: [String]) { self.header = header }

    mutating func add(_ row: [String]) { rows.append(row) }

    func render() -> String {
        var widths = header.map(\.count)
        for row in rows {
            for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            var text = ""
            for (i, cell) in cells.enumerated() {
                let last = i == cells.count - 1
                text += last ? cell : cell + String(repeating: " ", count: widths[i] - cell.count + 2)
            }
            return text + "\n"
        }
        return line(header) + line(widths.map { String(repeating: "-", count: $0) }) + rows.map(line).joined()
    }
}
