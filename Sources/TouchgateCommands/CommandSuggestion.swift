import ArgumentParser
import TouchgateAPI
import TouchgateTerminal

/// "Did you mean …" for a mistyped command (`touchgate enrol`, `touchgate secret gte`).
enum CommandSuggestion {
    /// A message naming the close commands when a word in `arguments` is not a command
    /// where one is expected; nil when every command word is known (or no command is close).
    static func forUnknownCommand(in arguments: [String]) -> String? {
        var command: any ParsableCommand.Type = Touchgate.self
        var path = ["touchgate"]
        for word in arguments {
            if word == "--" || word.hasPrefix("-") { return nil }
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty else { return nil }
            // Words a default subcommand takes (askpass's prompt) are not commands.
            if command.configuration.defaultSubcommand != nil,
               !subcommands.contains(where: { $0._commandName == word }) { return nil }
            if word == "help" { return nil }
            if let next = subcommands.first(where: { $0._commandName == word }) {
                command = next
                path.append(word)
                continue
            }
            let names = subcommands.map { $0._commandName }
            let close = names.filter { $0.hasPrefix(word) || distance($0, word) <= (word.count < 3 ? 1 : 2) }
            let known = "(\(path.joined(separator: " ")) --help lists them)"
            guard !close.isEmpty else {
                return "unknown command '\(StoredText.escaped(word))' \(known)"
            }
            return "unknown command '\(StoredText.escaped(word))'. Did you mean: "
                + close.map { (path + [$0]).joined(separator: " ") }.joined(separator: ", ") + "?"
        }
        return nil
    }

    /// Levenshtein distance.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var row = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var previous = row[0]
            row[0] = i
            for j in 1...max(b.count, 1) where !b.isEmpty {
                let current = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = current
            }
        }
        return row[b.count]
    }
}
