import TouchgateAPI

extension Interaction {
    /// A hint or warning for the person.
    func notice(_ message: String) {
        event(InteractionEvent(.notice, message))
    }
}
