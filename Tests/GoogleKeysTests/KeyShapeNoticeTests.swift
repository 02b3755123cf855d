import GoogleKeys
import Testing

@Suite struct KeyShapeNoticeTests {
    @Test func anAuthKeyGetsNoNoticeAndEveryOtherShapeAWarning() {
        let auth = "AQ." + String(repeating: "A", count: 50)
        #expect(KeyShapeNotice(Array(auth.utf8), name: "work") == nil)
        let standard = KeyShapeNotice(Array(("AIza" + String(repeating: "b", count: 35)).utf8), name: "work")
        #expect(standard?.hint?.contains("'gemvault key rotate work'") == true)
        #expect(KeyShapeNotice(Array("AIzaShort".utf8), name: "work")?.warning.contains("only 9 characters of 39") == true)
        #expect(KeyShapeNotice(Array("hello".utf8), name: "work")?.hint == nil)
    }
}
