/// Rows under a header, each column as wide as its widest cell and two spaces from the next
/// (the last one unpadded): how list commands show their rows to people. `--json` gives the
/// same rows as fields, for scripts.
public struct TextTable: Sendable {
    private let headers: [String]
    private var rows: [[String]] = []

    /// A table with these column headers.
    public init(_ headers: String...) {
        self.headers = headers
    }

    /// Adds a row; missing cells are empty. Cells are shown as given: escape stored text
    /// (``StoredText``) before it comes here.
    public mutating func add(_ cells: String...) {
        rows.append(cells)
    }

    /// Whether no row was added.
    public var isEmpty: Bool { rows.isEmpty }

    /// The header and the rows, one line each, without a final newline.
    public var text: String {
        let columns = headers.count
        let lines = [headers] + rows
        var widths = [Int](repeating: 0, count: columns)
        for line in lines {
            for (column, cell) in line.prefix(columns).enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        return lines.map { line in
            var text = ""
            for column in 0..<columns {
                let cell = column < line.count ? line[column] : ""
                if column > 0 { text += "  " }
                text += cell
                if column < columns - 1 { text += String(repeating: " ", count: widths[column] - cell.count) }
            }
            while text.last == " " { text.removeLast() }
            return text
        }.joined(separator: "\n")
    }
}
