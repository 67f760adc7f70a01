public import TouchgateAPI

extension TouchgateService: TouchgateRequests {

    public func listReaders() async throws(ServiceError) -> ReaderInventory {
        let readers = await readers()
        return ReaderInventory(readers: readers, explanation: readers.isEmpty ? noReaderExplanation() : nil)
    }
}
