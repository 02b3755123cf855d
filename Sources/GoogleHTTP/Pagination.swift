/// The one loop over Google's paged lists: `pageToken` in, `nextPageToken` out, an empty or
/// missing token for the last page. A token seen before would loop for ever, so it is refused.
public enum Pagination {
    /// Why a list was not used.
    public enum Refusal: Error, Sendable, Equatable {
        /// The server gave a token it had given before.
        case repeatedToken
        /// More items than `maxItems`.
        case tooManyItems
    }

    /// One page: its items and the token of the next, if any.
    public struct Page<Item> {
        public let items: [Item]
        public let nextPageToken: String?

        public init(_ items: [Item], next nextPageToken: String?) {
            self.items = items
            self.nextPageToken = nextPageToken
        }
    }

    /// Every item of every page `fetch` gets (given nil, then each next token), at most
    /// `maxPages` pages: past them, what came so far.
    public static func collect<Item, Failure: Error>(maxPages: Int, maxItems: Int = .max,
                                                     _ fetch: (_ token: String?) throws(Failure) -> Page<Item>,
                                                     refuse: (Refusal) -> Failure) throws(Failure) -> [Item] {
        var items: [Item] = []
        var token: String?
        var seen: Set<String> = []
        for _ in 0..<maxPages {
            let page = try fetch(token)
            items += page.items
            guard items.count <= maxItems else { throw refuse(.tooManyItems) }
            guard let next = page.nextPageToken, !next.isEmpty else { break }
            guard seen.insert(next).inserted else { throw refuse(.repeatedToken) }
            token = next
        }
        return items
    }
}
