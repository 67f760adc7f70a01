public import TouchgateAPI

extension TouchgateService: TouchgateRequests {

    public func devices() async throws(ServiceError) -> ReaderInventory {
        let readers = await readers()
        return ReaderInventory(readers: readers, explanation: readers.isEmpty ? noReaderExplanation() : nil)
    }
}
