import Testing
import TouchgateAPI
import TouchgateTerminal

/// Enrollment on a terminal: one line redrawn per scan, not two new lines.
struct ProgressLineTests {
    static func prompt(_ stage: Int, of stages: Int) -> InteractionEvent {
        var event = InteractionEvent(.fingerNeeded, "Place your right index finger on the reader (scan \(stage) of \(stages))")
        event.operation = "enroll"
        event.stage = stage
        event.stages = stages
        return event
    }

    static func done(_ completed: Int, of total: Int) -> InteractionEvent {
        var event = InteractionEvent(.enrollStage, "scan \(completed) of \(total) done")
        event.completed = completed
        event.total = total
        return event
    }

    @Test("each scan redraws one line with a bar; a hint ends it and stays on a line of its own; the last scan ends it")
    func redrawsOneLine() {
        let line = ProgressLine()
        let erase = "\r\u{1B}[2K"
        #expect(line.render(Self.prompt(1, of: 4)) == erase + "[--------------------] Place your right index finger on the reader (scan 1 of 4)")
        #expect(line.render(Self.done(1, of: 4)) == erase + "[#####---------------] scan 1 of 4 done")
        #expect(line.render(Self.prompt(2, of: 4))?.hasPrefix(erase + "[#####---------------] Place") == true)
        // A poor scan: not progress; the open bar is ended before its line.
        #expect(line.render(InteractionEvent(.retry, "Center your finger on the reader")) == nil)
        #expect(line.close() == "\n")
        #expect(line.close() == "", "ended once")
        _ = line.render(Self.prompt(2, of: 4))
        _ = line.render(Self.done(3, of: 4))
        // The reader finished: the last progress ends the line itself.
        #expect(line.render(Self.done(4, of: 4)) == erase + "[####################] scan 4 of 4 done\n")
        #expect(line.close() == "")
        // Verify's prompt is not enrollment: a line of its own.
        var verify = InteractionEvent(.fingerNeeded, "Place your finger on the reader")
        verify.operation = "verify"
        #expect(line.render(verify) == nil)
    }
}
