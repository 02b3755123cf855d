import Foundation
import Testing
@testable import Conversations

/// Attached files: what they are taken for, and how they go into a request and a record.
@Suite struct AttachmentTests {
    @Test func kindsComeFromTheFirstBytesNotTheName() throws {
        let cases: [([UInt8], String)] = [
            ([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2], "image/png"),
            ([0xFF, 0xD8, 0xFF, 0xE0, 0], "image/jpeg"),
            (Array("GIF87a..".utf8), "image/gif"),
            (Array("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8 ".utf8), "image/webp"),
            (Array("\u{0}\u{0}\u{0}\u{18}ftypheic....".utf8), "image/heic"),
            (Array("\u{0}\u{0}\u{0}\u{18}ftypmif1....".utf8), "image/heif"),
            (Array("%PDF-1.4\n".utf8), "application/pdf"),
        ]
        for (bytes, mime) in cases {
            let attachment = try Attachment.make(name: "dir/looks.txt", bytes: bytes)
            #expect(attachment.mimeType == mime && attachment.name == "looks.txt" && attachment.content == .binary(bytes))
            #expect(attachment.part == .file(mimeType: mime, bytes: bytes))
        }
        // An AVIF or MP4 has `ftyp` too, but is not an image Gemini takes inline here.
        #expect(throws: Attachment.Unsupported.self) { try Attachment.make(name: "clip", bytes: Array("\u{0}\u{0}\u{0}\u{18}ftypavif....".utf8)) }
        #expect(throws: Attachment.Unsupported.self) { try Attachment.make(name: "nul", bytes: [0x61, 0, 0x62]) }
        #expect(throws: Attachment.Unsupported.self) { try Attachment.make(name: "latin1", bytes: [0x63, 0x61, 0x66, 0xE9]) }
    }

    @Test func textGoesInAFenceLongerThanAnyInsideItWithItsDigest() throws {
        let text = "a ```` fence\n"
        let attachment = try Attachment.make(name: "/tmp/x/notes.md", bytes: Array(text.utf8))
        #expect(attachment.part.text == "File: notes.md\n`````\na ```` fence\n`````")
        #expect(attachment.sha256 == "4eaef3c99a37f9df3cecbc22ab8bcaddc6af90b86375f405ceae7a3065a8642d")
        let empty = try Attachment.make(name: "empty", bytes: [])
        #expect(empty.part.text == "File: empty\n```\n```" && empty.sha256 == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func aRecordKeepsContentOnlyWhenAskedAndChecksItsDigest() throws {
        let image = try Attachment.make(name: "p.png", bytes: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 9])
        let bare = SavedAttachment(image, keepContent: false)
        #expect(bare.data == nil && bare.text == nil && bare.attachment.content == .notKept)
        #expect(bare.attachment.part.text?.contains(image.sha256) == true)
        var kept = SavedAttachment(image, keepContent: true)
        #expect(kept.attachment == image)
        kept.data = Data([1, 2, 3]).base64EncodedString()
        #expect(kept.attachment.content == .notKept)
    }

    @Test func aRequestCarriesTheMessageThenItsFilesAndKeepsThemWithTheirTurn() throws {
        let note = try Attachment.make(name: "n.txt", bytes: Array("hi".utf8))
        var conversation = Conversation(model: "m", systemPrompt: nil, generation: GenerationOptions())
        let first = conversation.request(for: "look", attachments: [note])
        #expect(first.messages[0].parts == [.text("look"), note.part])
        #expect(conversation.request(for: "", attachments: [note]).messages[0].parts == [note.part])
        conversation.record(user: "look", attachments: [note], reply: ChatReply(text: "ok", finish: .complete, finishName: "STOP"))
        let second = conversation.request(for: "more")
        #expect(second.messages.map(\.parts.count) == [2, 1, 1])
        #expect(conversation.turns[0].modelName == "m")
    }

    @Test func oldTurnRecordsDecodeWithoutTheNewFields() throws {
        let json = #"{"user":"q","model":"a","interrupted":false,"time":5}"#
        let turn = try JSONDecoder().decode(SavedTurn.self, from: Data(json.utf8))
        #expect(turn.modelName == nil && turn.system == nil && turn.attachments == nil)
        let written = String(decoding: try JSONEncoder().encode(turn), as: UTF8.self)
        #expect(!written.contains("modelName") && !written.contains("attachments"))
    }
}

private extension MessagePart {
    var text: String? { if case .text(let text) = self { text } else { nil } }
}
