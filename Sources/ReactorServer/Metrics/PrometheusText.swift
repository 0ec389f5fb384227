/// Writes the Prometheus text exposition format (version 0.0.4): a `# HELP` and `# TYPE` line per
/// family, then its samples, `name{label="value",...} number`.
struct PrometheusText {
    private(set) var bytes: [UInt8] = []

    enum Kind: String {
        case counter, gauge, histogram
    }

    mutating func family(_ name: String, _ kind: Kind, help: String) {
        append("# HELP \(name) \(help)\n# TYPE \(name) \(kind.rawValue)\n")
    }

    mutating func sample(_ name: String, _ value: Double) {
        sample(name, [], value)
    }

    mutating func sample(_ name: String, _ value: some BinaryInteger) {
        sample(name, [], Double(value))
    }

    mutating func sample(_ name: String, _ labels: [(String, String)], _ value: Double) {
        append(name)
        if !labels.isEmpty {
            append("{")
            for (index, (label, text)) in labels.enumerated() {
                if index > 0 { append(",") }
                append(label)
                append("=\"")
                append(Self.escaped(text))
                append("\"")
            }
            append("}")
        }
        append(" ")
        append(Self.format(value))
        append("\n")
    }

    mutating func sample(_ name: String, _ labels: [(String, String)], _ value: some BinaryInteger) {
        sample(name, labels, Double(value))
    }

    /// A histogram's `_bucket` (cumulative, ending with `+Inf`), `_sum` and `_count` samples.
    mutating func histogram(_ name: String, _ labels: [(String, String)] = [], _ histogram: Histogram) {
        var cumulative: UInt64 = 0
        for (bound, count) in zip(histogram.bounds, histogram.counts) {
            cumulative += count
            sample(name + "_bucket", labels + [("le", Self.format(bound))], cumulative)
        }
        sample(name + "_bucket", labels + [("le", "+Inf")], histogram.count)
        sample(name + "_sum", labels, histogram.sum)
        sample(name + "_count", labels, histogram.count)
    }

    private mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// Label values escape backslash, double quote and newline.
    static func escaped(_ text: String) -> String {
        guard text.contains(where: { $0 == "\\" || $0 == "\"" || $0 == "\n" }) else { return text }
        var escaped = ""
        for character in text {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
