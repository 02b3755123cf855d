import AgeFormat
import Testing
import VaultCore

@Suite struct HybridIdentityTests {
    /// The example pair of age.md (C2SP), section "The MLKEM768-X25519 ... recipient type".
    static let specIdentity = "AGE-SECRET-KEY-PQ-1XX76JRALNLXDMEW0CRK45QMCCH4X06SE84UN3VPM33W6HWDX0H3SK3ZQFR"
    static let specRecipient = "age1pq1x34nzsvr0rxjsgdn8zgyhfe8j7ceq5r9rdelkjuh3y235jzxshfg87pzf5zrqtzdxz95paef6caq5aapdmwjjqpjfdyxnzr2zampc3uxy0dg4z2n2gm9su72p0pc3u0jvev55l694v78snxg3yzvcl7yda0eyytqj6a0ec477lnhcy5hzpz4zq3pxanve4cn62gqj3pjy5lqj9c6kyj4v2z8alktn8zh99970x79gjkv7522hv9kfz35zsnxhsx8wwtmu9cy3ftzjgwcp4sshn3llnylnpdsyz5jm72vefv4x5vfwytrefxg4wq3mv42wcrvkj742479zrxzpvp2p3e9fed9f0739vcu80r7ma28qfhnvlv4gfzel9q654dj3zmuvvz893azhxdvs9fxd0r7jzchzcfcs5mkyyjxhw0n2z6dvp9yn9qfdp29h0azxqyjw6v7fhyuzj7zel0uq6j9rd7wgrpz7mf5dnj43jwsgvrc8qcnhy7tu6dkdujuxzkp9xj43xe8h92ktre2a3u3s8mm5mrp9nr9pwkgtz4mdlq9hgn4fps4k57ff6wddn2fy23t47sm20r8km8sd2pcyyafnet8f0dajsrlyjeah4n3mssr6aseevuuskdvq5lzguyvpgwpta742c6698vgutzqgny8usfg0w2he7kq5vyxjd0f9hqg8xk26y9e4th0gezq92q4cpp5p2y9hf5f2cje5l0c3sa3a2qxmm38pxxvhxh99yzmfz0zk7r2s64nnwjhkfgfr3gf8xnmppcgmaykvh5sh6g7vk9790rf8ws0axmr2t7z8aae5fq2029uvcn2ghgt4fu4wgwdc0k0cz52qkvwmuzj8p8k5jgf3xzk5zmrkavjekjrpeq408xz3zxazwkc6tyfmhayrkfpjhwtz5mp8j8guqe43k2q6m2kte03vrw27y3wmqyu5etmt9dnkwcnnpmu9gz9dekfhdevf42ucshphnrk38ra6hx8w5f8q5ru0xdhrjxmwqf6cused7zc5xvq43r0zscjglpwlptpwydhqw64xz7ptjdyeyzpq2zkxtmzg29gzjpvzva4d3l0cenn9xs297wf4y4ukwrunf57xj6pm7nvrkwvtrt8hwcmgv8x7ajw7258ugf9wvkmk4052ekg87tw5vnx8nq2swyzv77v8yqlwsenvamr0zssknwts8rrhfuwj7ykysnq9jxy0uv3kuyt22djszjdtvpz6d0s0kwh8ryynddzud92emeyvvyqktd0jtj7rvvg5gch25v8smlvny3kvn5gagyz475ze2y6q466xqmz2n3hs77lddeqyta2nch5k2u5yacuk9ywnwfdzvyejnucz724hj77hrrmakm7pr3kxsrxq22ejexlud9fy2kdqmkg5yncz7jm5wv2qjk5w5kvcpqsry2yqffh2la52dxfjkjq5rzhjzeyn6dupn0qwtyv7s4lwg3xdarsdlwe2y3tujy480y7z39q259fzx6jhd2j0f5hagqpcpees7hzc2yrk5cy788uk3s7qvp5cpepx24gvws3m2g433exgwppnkjscec8qu4y9z9r7vccexjcjaen42245lmgmxmuavg9alej92322gvvyy2t6267v09ch64y0m53jff0vjj96s0ypk60hr3jw4myd6m5hpn3xjstx7tl2szhpr5qe8jj08ydjc4wy2rch2fhuy3pdfjax5awe9j99ly5hkntzz9fe5zatgjvzdd0kgtxs25njnajyf6ssekp7gelxquusn4pt25czh3scj68kq79wdn5tgm6yvm9nzavrg043x3msnygf8dweknw5jmqd0uvny6ttsn09508k0c55zfnegrm9efhxpfqdkmhh6gjtqmwze9pyyzk3tlhl53k2ykx3qheyty7saeq0d3fzv49zc0k"

    @Test func theSpecsIdentityGivesTheSpecsRecipient() throws {
        let identity = try #require(HybridIdentity(parsing: SecretBytes(utf8: Self.specIdentity)))
        #expect(identity.recipient.text == Self.specRecipient)
        #expect(identity.recipientText == Self.specRecipient)
        #expect(identity.encoded.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } == Self.specIdentity)
        #expect(HybridRecipient(parsing: Self.specRecipient) == identity.recipient)
    }

    @Test func aGeneratedIdentityOpensWhatItsRecipientWraps() throws {
        let identity = HybridIdentity.generate()
        let recipient = try #require(HybridRecipient(parsing: identity.recipient.text))
        #expect(recipient.isPostQuantum)
        #expect(!X25519Identity.generate().recipient.isPostQuantum)
        let file = try AgeFile.encrypt(SecretBytes(utf8: "hello"), to: [recipient])
        let text = String(decoding: file.prefix(80), as: UTF8.self)
        #expect(text.contains("-> mlkem768x25519 "))
        let opened = try AgeFile.decrypt(file, with: [identity])
        #expect(opened.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } == "hello")
        let other = HybridIdentity.generate()
        #expect(throws: AgeError(.noMatch, "no identity given matches a recipient of the file")) { try AgeFile.decrypt(file, with: [other]) }
        let reparsed = try #require(HybridIdentity(parsing: identity.encoded))
        #expect(reparsed.recipient == identity.recipient)
    }

    @Test func aDelegatedIdentityAsksForEveryDecapsulationInOneRequest() throws {
        let holder = HybridIdentity.generate()
        let file = try AgeFile.encrypt(SecretBytes(utf8: "k"), to: [HybridIdentity.generate().recipient, holder.recipient])
        let requests = CallLog()
        let delegated = DelegatedHybridIdentity(recipient: holder.recipient) { encs throws(AgeError) in
            requests.add(encs.count)
            do { return try holder.decapsulate(encs) } catch { throw AgeError(.holderUnavailable, "\(error)") }
        }
        let opened = try AgeFile.decrypt(file, with: [delegated])
        #expect(opened.withUnsafeBytes { Array($0) } == Array("k".utf8))
        #expect(requests.calls == [2])
    }

    @Test func aFileWithTooManyHybridStanzasIsRefusedBeforeAnyDecapsulation() throws {
        let stanza = try HybridIdentity.generate().recipient.wrap(SecretBytes.random(count: 16))
        let calls = CallLog()
        let delegated = DelegatedHybridIdentity(recipient: HybridIdentity.generate().recipient) { encs throws(AgeError) in
            calls.add(encs.count)
            return encs.map { _ in nil }
        }
        let error = try #require(throws: AgeError.self) { try delegated.unwrap(Array(repeating: stanza, count: 257)) }
        #expect(error.kind == .unsupported && calls.calls.isEmpty)
        let extra = AgeStanza(type: "mlkem768x25519", arguments: stanza.arguments + ["x"], body: stanza.body)
        let header = try #require(throws: AgeError.self) { try delegated.unwrap([extra]) }
        #expect(header.kind == .header && calls.calls.isEmpty)
    }

    @Test func malformedTextIsNoIdentityOrRecipient() throws {
        #expect(HybridIdentity(parsing: SecretBytes(utf8: "AGE-SECRET-KEY-1EGTZVFFV20835NWYV6270LXYVK2VKNX2MMDKWYKLMGR48UAWX40Q2P2LM0")) == nil)
        #expect(HybridRecipient(parsing: String(Self.specRecipient.dropLast())) == nil)
        #expect(HybridRecipient(parsing: "age1zvkyg2lqzraa2lnjvqej32nkuu0ues2s82hzrye869xeexvn73equnujwj") == nil)
        #expect(HybridRecipient(publicKey: [UInt8](repeating: 0xff, count: 1216)) == nil, "coefficients not reduced modulo q")
    }
}

/// Counts calls from a Sendable closure.
final class CallLog: @unchecked Sendable {
    private(set) var calls: [Int] = []
    func add(_ count: Int) { calls.append(count) }
}
