@testable import AgeFormat
import Testing
import VaultCore

@Suite struct TagRecipientTests {
    /// The examples of age.md (C2SP), section "The tagged recipient types".
    static let specTag = "age1tag1qt8lw0ual6avlwmwatk888yqnmdamm7xfd0wak53ut6elz5c4swx2yqdj4e"
    static let specHybridTag = "age1tagpq1m3e4wvp6hzcrn9exhy0ae3xfx2sjymp594k3tg7j4dpmj922we65vtnmrt2pyallax8669zqkr2pmfchptr4n38kug2xmcmp3adk2lnjqu00x5kxz5pvhmrltvfh9wuq973pcx35cnq8syn9qd3tzpehgztl4xpzr3tpd67g8af9trnjpc05gh7wu536aq4qt2y8zhsm4tvrfpsfl36qs5fpzysnk3sp9w77qzeg49357xex40v4s2lvt620swyys7u8yxdcnu4rkkwxdmt55gsuc3h5c5swahnegjgqwc60hn085ec3sjztwm45l44y3j2at9t6v9zra4ek3kek6waecqm98yaxl37w0d2zra626nz63jdm5sg59w7lyptw83zm6fntd8d0x03a9z6h9prfgpygzar6zrxjcrt4cdctk2mhf95s4a6v4zklfd49xhpsaeujm57thx2x3e3hwzc86ftfhmq5mkxxz3d6r8ws24xj4qfn73eyezg2wy094e3why592pghz27ruq3vkyegrv80eftnw9wqzwgvnwyseaus0yt84fylzrpzp6x2fguxuqjmgudr8xd33qm30evdpxd3jvjg8qh4q60kyq80jgff369k7nrepdc38grd2dava520excqp0ey0x39khx8ry03yffcatgv84fsx5j49djpapedsy693zute5xv5g2ewzrlj5se7akvkc4g4vmzhputpq8eyj9wz5dz6qtn7g3cfpd95nahw4ytspan0feyye04dcylv24ege7zkaj004gjwcxqxfqu2quawa83sx452jqjn8t48czp0xspwgnmvjyhttzzy6nhq8xzkdwnvsfefkwva6asrqc93zjn4rly5gnlv93xy3uzmr39szvjnf63426qzyeyvguc4vdcquwgsxgq236afcpqz866ny4tn7ckc0umefj242rt5vtvwqzzrvfev2mpvqcufp9pqvefyv4ftyuhgausfzuaadsczeykmft5wv3frzgrcp9ztr93h478ke4t86spp2uhyjkj73mp9g92ddk2fpv7v3njzsqgwhq3789sqrgkskehn0zjscckhwftyq4vet7vrlx2hs5kd9cwnq6t0djffhh3zquh4j3p0yaj9z2rc9wykg0usqw7983rrgur9jg8rnnqypwcz2lyclnnc705fc5g3an93ps60q6mxqp85u0ewtxdjlqcks84yduft0a0g6e7naew3v9u2d08knarvajn8q3gq9pgxde3s7nx94lus48wwvw2xjm7k82tvylec2393jdsuvch2xpe77w8hpv9nvsxfsrs270njpmfvpmgyk2cffl9tjp3qqcc4dfkf5rme2dg0x7ew8g39www5smm705q5da4eqvnqwrkavtq6xje9ss38hnkglz4eddz8f5qruvqmq2ff9l22gwkv8h432rdkysy0grkul8e2fedvkyyapfxt760udcgu92m54wl9yavmj4ga3ph9r5n99cjrq6wj5v33x33fe5vkjvfwnnt40wuv2hyexc9f4ylyqv9ldqq9epd4yuv8vrsfx2qy2kqz08kqhnzspy6s0x8fa5c2xkg5y2q0rvz4vnk7rp0acg6eksc3t7cxnn8y7glkjsqja3p56uz6vvhcw55d3ysad0hvsqxpjnc7svenf2gc5xn5kyr0et2vvyruxlnpqcdpqh9pzplumy5yzjxftyzh9ujfw0jq7ee60zx2x23p0jzyh9dvmly8p9h9ysptlqu7kwnejd65dnr75a0np2fvke8xen38r57w6z3wz3mycjmmn267wwxndfh9jdps7uxtct2wwfgamkpa5ap8s96lhfjztpwcm6fguhphu38yunu2v4vz3syzrvgwtqpemkewzp766nyu6texxvjlaemnhyyqutkcy6a42vqfsz49rw5wr4gt70r4vdaasehqjg46fnyts4sthrxadfllha3avu49wsj2c4jx"

    @Test func theSpecsRecipientsParseAndPrintTheSame() throws {
        let tag = try #require(P256TagRecipient(parsing: Self.specTag))
        #expect(tag.text == Self.specTag && tag.point.count == 33 && !tag.isPostQuantum)
        let hybrid = try #require(MLKEM768P256TagRecipient(parsing: Self.specHybridTag))
        #expect(hybrid.text == Self.specHybridTag && hybrid.publicKey.count == 1249 && hybrid.isPostQuantum)
    }

    @Test func aTaggedStanzaHasTheTagEncAndABodyOfTheSpecsSizes() throws {
        let fileKey = SecretBytes.random(count: 16)
        let tag = try #require(P256TagRecipient(parsing: Self.specTag)).wrap(fileKey)
        #expect(tag.type == "p256tag" && tag.arguments.count == 2 && tag.body.count == 32)
        let enc = try #require(StrictBase64.decode(Array(tag.arguments[1].utf8)))
        #expect(StrictBase64.decode(Array(tag.arguments[0].utf8))?.count == 4 && enc.count == 65)
        let point = try #require(P256TagRecipient(parsing: Self.specTag)).point
        #expect(StrictBase64.decode(Array(tag.arguments[0].utf8)) == StanzaTag.tag(enc: enc, point: point, label: Labels.tagInfo))
        let hybrid = try #require(MLKEM768P256TagRecipient(parsing: Self.specHybridTag)).wrap(fileKey)
        #expect(hybrid.type == "mlkem768p256tag" && hybrid.arguments.count == 2 && hybrid.body.count == 32)
        #expect(StrictBase64.decode(Array(hybrid.arguments[1].utf8))?.count == 1153)
    }

    @Test func aHybridTagStanzaOpensWithTheKeyItWasMadeFor() throws {
        let kem = HybridKEM.mlkem768p256
        let key = try kem.expand(seed: SecretBytes.random(count: 32))
        let recipient = try #require(MLKEM768P256TagRecipient(parsing: String(decoding: Bech32.encode(hrp: "age1tagpq", key.publicKey), as: UTF8.self)))
        let fileKey = SecretBytes.random(count: 16)
        let stanza = try recipient.wrap(fileKey)
        let enc = try #require(StrictBase64.decode(Array(stanza.arguments[1].utf8)))
        let shared = try kem.decapsulate(enc, with: key)
        let opened = try #require(HPKE.open(stanza.body, kem: kem.kemID, sharedSecret: shared, info: Labels.hybridTagInfo))
        #expect(opened.isEqual(to: fileKey))
    }

    @Test func aWrongLengthOrEncodingIsNoRecipient() {
        let data = Bech32.decode(Array(Self.specTag.utf8))!.data
        #expect(P256TagRecipient(parsing: String(decoding: Bech32.encode(hrp: "age1tag", Array(data.dropLast())), as: UTF8.self)) == nil)
        #expect(P256TagRecipient(parsing: String(decoding: Bech32.encode(hrp: "age1tag", [0x05] + data.dropFirst()), as: UTF8.self)) == nil)
        #expect(MLKEM768P256TagRecipient(parsing: Self.specTag) == nil)
        #expect(P256TagRecipient(parsing: Self.specHybridTag) == nil)
    }
}
