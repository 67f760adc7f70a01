import Testing
import TouchgateTerminal

/// What list commands print for people: a header and aligned columns.
struct TextTableTests {
    @Test("each column is as wide as its widest cell, two spaces apart; the last is not padded, and no line ends in spaces")
    func alignsColumns() {
        var table = TextTable("NAME", "POLICY", "NOTES")
        table.add("a-much-longer-name", "biometry-any", "")
        table.add("b", "passphrase", "a touch every time (--fresh)")
        table.add("c")
        #expect(table.text == """
            NAME                POLICY        NOTES
            a-much-longer-name  biometry-any
            b                   passphrase    a touch every time (--fresh)
            c
            """)
        #expect(!table.isEmpty)
        #expect(TextTable("ONE").isEmpty)
        #expect(TextTable("ONE", "TWO").text == "ONE  TWO")
    }
}
