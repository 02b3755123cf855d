import Testing
import VaultCore

/// Review finding 1: labels that look like a trusted sender's on a terminal compare as alike,
/// and `identity --label` takes only plain labels.
@Suite struct LabelLookAlikeTests {
    @Test(arguments: [
        "alice@lab ", " alice@lab", "alice@lab\u{00A0}", "\u{0430}lice@lab", "alice@lab\u{3164}", "alice@lab\u{2028}", "alice@lab\u{200B}",
        "ALICE@LAB", "aIice@lab", "a1ice@lab", "alice@1ab", "alice\u{FF20}lab", "\u{FF41}lice@lab", "\u{1D41A}lice@lab", "ali\u{0441}e@lab",
        "ali\u{0301}ce@lab", "al\u{00ED}ce@lab", "alice@l\u{0391}b", "alice@lab\u{FE0F}", "alice@lab\u{2009}",
    ]) func aLookAlikeHasTheFormOfTheLabelItPassesFor(_ label: String) {
        #expect(VaultIdentity.lookAlikeForm(of: label) == VaultIdentity.lookAlikeForm(of: "alice@lab"), "\(label.unicodeScalars.map(\.value))")
    }

    @Test func distinctLabelsStayDistinct() {
        let forms = Set(["alice@lab", "bob@lab", "alice@lab2", "alice@home", "carol", "Ada, lab 3"].map(VaultIdentity.lookAlikeForm(of:)))
        #expect(forms.count == 6)
        #expect(VaultIdentity.lookAlikeForm(of: "  Ada,\u{00A0} lab\u{3000}3 ") == VaultIdentity.lookAlikeForm(of: "Ada, lab 3"))
        #expect(VaultIdentity.lookAlikeForm(of: "modern") == VaultIdentity.lookAlikeForm(of: "rnodern"))
    }

    @Test func aNewLabelIsPrintableASCIIWithoutSpaceAtItsEnds() {
        for plain in ["alice@lab", "Ada, lab 3", "x", String(repeating: "a", count: VaultIdentity.labelLimit)] {
            #expect(VaultIdentity.isPlainLabel(plain), "\(plain)")
        }
        for odd in ["alice@lab ", " alice@lab", "alice  lab", "alice@lab\u{00A0}", "\u{0430}lice@lab", "alice@lab\u{3164}", "alice@lab\u{2028}",
                    "Zo\u{00EB}", "", String(repeating: "a", count: VaultIdentity.labelLimit + 1)] {
            #expect(!VaultIdentity.isPlainLabel(odd), "\(odd.unicodeScalars.map(\.value))")
        }
        // What older vaults hold still opens: only controls are refused there.
        #expect(VaultIdentity.isValidLabel("\u{0430}lice@lab ") && !VaultIdentity.isValidLabel("a\u{202E}b"))
    }
}
