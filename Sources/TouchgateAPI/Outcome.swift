/// A command's answer as one JSON object: `{"result": "<kind>", …the report's fields…}`.
public struct Outcome<Report: Encodable & Sendable>: Encodable, Sendable {
    /// What happened, such as `enrolled`, `match`, `stored`, `locked`.
    public var result: String
    /// The details.
    public var report: Report

    /// An outcome named `result` carrying `report`.
    public init(_ result: String, _ report: Report) {
        self.result = result
        self.report = report
    }

    /// Encodes `result` and the report's own keys side by side in one object.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: WireKey.self)
        try container.encode(result, forKey: WireKey("result"))
        try report.encode(to: encoder)
    }
}

/// A report with no fields, for outcomes that need none beyond `result`.
public struct EmptyReport: Codable, Sendable, Equatable {
    /// Nothing.
    public init() {}
}
